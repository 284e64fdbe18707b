#!/usr/bin/env bash
# A throw-away S3 server for the tests: a single-node Ceph cluster (one monitor, one OSD on
# memstore, the RADOS Gateway on loopback), from Debian's ceph-mon, ceph-osd and radosgw.
#
#   scripts/s3-server.sh start [DIR]   installs what is missing, starts the cluster in DIR (a new
#                                      temporary directory by default), creates a user and a
#                                      bucket, and prints the environment the tests read:
#                                      STRATA_S3_ENDPOINT, STRATA_S3_BUCKET, AWS_ACCESS_KEY_ID,
#                                      AWS_SECRET_ACCESS_KEY, AWS_REGION, STRATA_S3_SERVER_DIR
#                                      (also written to DIR/env).
#   scripts/s3-server.sh stop DIR      stops the daemons it started (by their pid files only)
#                                      and removes DIR.
#   scripts/s3-server.sh restart-gateway DIR   stops and starts radosgw alone (tests of a server
#                                      that goes away mid-workload).
#
# Ports: STRATA_S3_PORT (gateway, default 7480) and STRATA_S3_MON_PORT (default 40000 + the
# gateway port's last three digits), so that two clusters at once need only other ports.
set -euo pipefail

command_name="${1:-}"
port="${STRATA_S3_PORT:-7480}"
mon_port="${STRATA_S3_MON_PORT:-$((40000 + port % 1000))}"
access_key="strata-test-key"
secret_key="strata-test-secret-0123456789abcdef"
bucket="strata-test"

install_if_missing() {
    if command -v ceph-mon >/dev/null && command -v ceph-osd >/dev/null && command -v radosgw >/dev/null; then
        return
    fi
    if ! command -v apt-get >/dev/null; then
        echo "s3-server: ceph-mon, ceph-osd and radosgw are missing and there is no apt-get to install them" >&2
        exit 3
    fi
    local sudo=""
    [ "$(id -u)" -ne 0 ] && sudo="sudo"
    echo "Installing ceph-mon, ceph-osd and radosgw (for the S3 tests)…" >&2
    $sudo apt-get update -qq >&2
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends ceph-mon ceph-osd radosgw curl uuid-runtime >&2
}

# Signals the daemon whose pid file is given, only if that pid is a Ceph daemon.
stop_pidfile() {
    local file="$1"
    [ -f "$file" ] || return 0
    local pid
    pid="$(cat "$file" 2>/dev/null || true)"
    [ -n "$pid" ] || return 0
    local comm
    comm="$(cat "/proc/$pid/comm" 2>/dev/null || true)"
    case "$comm" in
        ceph-mon|ceph-osd|radosgw) kill "$pid" 2>/dev/null || true ;;
        *) return 0 ;;
    esac
    for _ in $(seq 1 50); do
        comm="$(cat "/proc/$pid/comm" 2>/dev/null || true)"
        # Gone, or a zombie (a container without an init reaps late).
        if [ -z "$comm" ] || grep -q '^State:.*Z' "/proc/$pid/status" 2>/dev/null; then return 0; fi
        sleep 0.1
    done
    kill -9 "$pid" 2>/dev/null || true
}

wait_for() {
    local what="$1" tries="$2"
    shift 2
    for _ in $(seq 1 "$tries"); do
        if "$@" >/dev/null 2>&1; then return 0; fi
        sleep 0.1
    done
    echo "s3-server: $what did not come up; logs in $dir" >&2
    exit 4
}

start_gateway() {
    radosgw -c "$dir/ceph.conf" -n client.rgw.strata --keyring "$dir/rgw.keyring"
    wait_for "radosgw on 127.0.0.1:$port" 300 curl -sf -o /dev/null "http://127.0.0.1:$port/"
}

case "$command_name" in
start)
    install_if_missing
    dir="${2:-$(mktemp -d /tmp/strata-s3.XXXXXX)}"
    mkdir -p "$dir"
    dir="$(cd "$dir" && pwd)"
    fsid="$(uuidgen)"
    mkdir -p "$dir/mon" "$dir/osd" "$dir/run"
    cat > "$dir/ceph.conf" <<EOF
[global]
fsid = $fsid
mon host = [v2:127.0.0.1:$mon_port,v1:127.0.0.1:$((mon_port + 1))]
auth cluster required = cephx
auth service required = cephx
auth client required = cephx
keyring = $dir/keyring
run dir = $dir/run
pid file = $dir/run/\$name.pid
log file = $dir/\$name.log
admin socket = $dir/run/\$name.asok
osd pool default size = 1
osd pool default min size = 1
osd pool default pg num = 1
osd pool default pgp num = 1
osd pool default pg autoscale mode = off
osd crush chooseleaf type = 0
mon allow pool size one = true
mon warn on pool no redundancy = false
paxos propose interval = 0.01
paxos min wait = 0.001
[mon]
mon data = $dir/mon/\$id
[osd]
osd data = $dir/osd/\$id
keyring = $dir/osd/\$id/keyring
osd objectstore = memstore
memstore device bytes = 2147483648
osd op num shards = 1
[client.rgw.strata]
rgw frontends = beast endpoint=127.0.0.1:$port
rgw dns name = localhost
keyring = $dir/rgw.keyring
EOF
    ceph-authtool --create-keyring "$dir/keyring" --gen-key -n mon. --cap mon 'allow *' >/dev/null
    ceph-authtool "$dir/keyring" --gen-key -n client.admin --cap mon 'allow *' --cap osd 'allow *' --cap mds 'allow *' --cap mgr 'allow *' >/dev/null
    monmaptool --create --fsid "$fsid" --addv a "[v2:127.0.0.1:$mon_port,v1:127.0.0.1:$((mon_port + 1))]" "$dir/monmap" >/dev/null
    ceph-mon -c "$dir/ceph.conf" --mkfs -i a --monmap "$dir/monmap" --keyring "$dir/keyring"
    ceph-mon -c "$dir/ceph.conf" -i a
    wait_for "ceph-mon" 100 ceph -c "$dir/ceph.conf" -s --connect-timeout 2
    osd_uuid="$(uuidgen)"
    osd_secret="$(ceph-authtool --gen-print-key)"
    echo "{\"cephx_secret\": \"$osd_secret\"}" | ceph -c "$dir/ceph.conf" osd new "$osd_uuid" -i - >/dev/null
    mkdir -p "$dir/osd/0"
    ceph-osd -c "$dir/ceph.conf" -i 0 --mkfs --key "$osd_secret" --osd-uuid "$osd_uuid" 2>/dev/null
    # --mkfs --key does not write the OSD's keyring; without it: "failed to fetch mon config".
    printf '[osd.0]\n\tkey = %s\n' "$osd_secret" > "$dir/osd/0/keyring"
    ceph-osd -c "$dir/ceph.conf" -i 0
    wait_for "ceph-osd" 300 bash -c "ceph -c '$dir/ceph.conf' osd dump | grep -q '^osd.0 up'"
    ceph -c "$dir/ceph.conf" auth get-or-create client.rgw.strata mon 'allow rw' osd 'allow rwx' > "$dir/rgw.keyring"
    start_gateway
    radosgw-admin -c "$dir/ceph.conf" user create --uid=strata --display-name=strata \
        --access-key="$access_key" --secret="$secret_key" >/dev/null
    endpoint="http://127.0.0.1:$port"
    # curl signs the payload hash only when the header names it (RGW checks it).
    curl -sf -X PUT --aws-sigv4 "aws:amz:us-east-1:s3" --user "$access_key:$secret_key" \
        -H "x-amz-content-sha256: UNSIGNED-PAYLOAD" "$endpoint/$bucket" >/dev/null
    cat > "$dir/env" <<EOF
export STRATA_S3_ENDPOINT=$endpoint
export STRATA_S3_BUCKET=$bucket
export AWS_ACCESS_KEY_ID=$access_key
export AWS_SECRET_ACCESS_KEY=$secret_key
export AWS_REGION=us-east-1
export STRATA_S3_SERVER_DIR=$dir
EOF
    cat "$dir/env"
    ;;
stop)
    dir="${2:?usage: s3-server.sh stop DIR}"
    [ -d "$dir" ] || exit 0
    stop_pidfile "$dir/run/client.rgw.strata.pid"
    stop_pidfile "$dir/run/osd.0.pid"
    stop_pidfile "$dir/run/mon.a.pid"
    rm -rf "$dir"
    ;;
restart-gateway)
    dir="${2:?usage: s3-server.sh restart-gateway DIR}"
    stop_pidfile "$dir/run/client.rgw.strata.pid"
    start_gateway
    ;;
*)
    echo "usage: scripts/s3-server.sh start [DIR] | stop DIR | restart-gateway DIR" >&2
    exit 64
    ;;
esac
