#if canImport(Observation)
import Observation

/// A query's results that stay current, for SwiftUI (`@Observable`): a view that reads
/// ``objects`` is redrawn after every commit that changes them. It lives on the main actor,
/// where it runs the query: at creation, and once per burst of commits (commits that land
/// before the main actor gets to it are coalesced into one run), runs at least
/// `minimumInterval` apart (see ``QueryObservation``).
///
/// ```swift
/// @MainActor @Observable final class OrdersModel {
///     let orders: LiveResults<Order>
///     init(store: Store) throws {
///         orders = try LiveResults(store.box(for: Order.self).query { Order.amount > 0 }
///             .ordered(by: Order.amount, .descending).build())
///     }
/// }
///
/// struct OrdersView: View {
///     let model: OrdersModel
///     var body: some View { List(model.orders.objects, id: \.id) { Text($0.summary) } }
/// }
/// ```
///
/// It stops when released, after ``cancel()``, or when the store closes (``objects`` then keeps
/// the last results). A run that fails sets ``error`` and keeps the last results.
@MainActor @Observable
public final class LiveResults<T: Entity> {
    /// The latest results, in the query's order.
    public private(set) var objects: [T] = []
    /// The failure of the latest run, nil when it succeeded.
    public private(set) var error: StrataError?
    /// How many times the query ran (1 after creation).
    public private(set) var refreshCount = 0

    @ObservationIgnored private let query: Query<T>
    @ObservationIgnored private var registration: ObservationRegistration?
    @ObservationIgnored private var throttle: ReadThrottle

    /// Runs `query` now and keeps its results current. Throws ``StrataError/storeClosed`` on a
    /// closed store, or what the first run throws.
    public init(_ query: Query<T>, minimumInterval: Duration = QueryObservationDefaults.minimumInterval) throws(StrataError) {
        self.query = query
        throttle = ReadThrottle(minimumInterval: minimumInterval)
        let weak = WeakLiveResults<T>()
        let subscriber = ChangeSubscriber(entityNames: query.readEntities) {
            Task { @MainActor in
                if let due = weak.target?.throttle.due {
                    try? await Task.sleep(until: due, clock: .continuous)
                }
                weak.target?.refresh()
            }
        }
        registration = try ObservationRegistration(hub: query.box.store.changeHub, subscriber: subscriber)
        objects = try query.find()
        refreshCount = 1
        weak.target = self
    }

    /// Stops following the store.
    public func cancel() {
        registration?.cancel()
        registration = nil
    }

    private func refresh() {
        // Everything merged since the last run is taken at once: one run per burst.
        guard let registration, registration.subscriber.take() != nil else { return }
        throttle.reading()
        do {
            objects = try query.find()
            error = nil
        } catch {
            self.error = error
        }
        refreshCount += 1
    }
}

/// The live results, seen from the tasks a commit starts, without keeping them alive.
@MainActor
private final class WeakLiveResults<T: Entity>: Sendable {
    weak var target: LiveResults<T>?
}
#endif
