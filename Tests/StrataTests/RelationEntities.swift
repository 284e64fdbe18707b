import Foundation
import Strata

// The seed documents' models, as Strata declares them (ObjectBox Swift relations; Realm's and
// AutoDB's examples have the same shapes).

@Entity
final class Buyer {
    var id: Id = 0
    var name = ""
    @Backlink(\Purchase.buyer) var purchases: ToMany<Purchase> = nil

    init(name: String) { self.name = name }
}

@Entity
final class Purchase {
    var id: Id = 0
    var summary = ""
    var buyer: ToOne<Buyer> = nil

    init(summary: String, buyer: Buyer? = nil) {
        self.summary = summary
        self.buyer = ToOne(target: buyer)
    }
}

@Entity
final class Student {
    var id: Id = 0
    var name = ""
    var teachers: ToMany<Teacher> = nil

    init(name: String) { self.name = name }
}

@Entity
final class Teacher {
    var id: Id = 0
    var name = ""
    @Backlink(\Student.teachers) var students: ToMany<Student> = nil

    init(name: String) { self.name = name }
}

@Entity
final class TreeNode {
    var id: Id = 0
    var name = ""
    var parent: ToOne<TreeNode> = nil
    @Backlink(\TreeNode.parent) var children: ToMany<TreeNode> = nil

    init(name: String) { self.name = name }
}

/// A struct entity with relations (ObjectBox's "Using Relations with Structs").
@Entity
struct Pupil {
    var id: Id = 0
    var name = ""
    var teachers: ToMany<Teacher> = nil
}

// Realm's embedded-object example: a contact owns its address; a business owns its addresses.

@Entity(embedded: true)
final class Address {
    var id: Id = 0
    var street = ""
    var city = ""

    init(street: String, city: String) {
        self.street = street
        self.city = city
    }
}

@Entity
final class Contact {
    var id: Id = 0
    var name = ""
    var address: ToOne<Address> = nil

    init(name: String, address: Address? = nil) {
        self.name = name
        self.address = ToOne(target: address)
    }
}

@Entity
final class Business {
    var id: Id = 0
    var name = ""
    var addresses: ToMany<Address> = nil

    init(name: String) { self.name = name }
}

// Realm's relationship guide: a person with at most one companion dog (to-one), any number of
// dogs (to-many), and the dog's owners as an inverse relationship.

@Entity
final class Dog {
    var id: Id = 0
    var name = ""
    @Backlink(\Person.dogs) var owners: ToMany<Person> = nil

    init(name: String) { self.name = name }
}

@Entity
final class Person {
    var id: Id = 0
    var name = ""
    var companion: ToOne<Dog> = nil
    var dogs: ToMany<Dog> = nil

    init(name: String) { self.name = name }
}

// AutoDB's relations document: album art and its album (one-to-one), a parent and its children.

@Entity
final class Album {
    var id: Id = 0
    var name = ""
    var artist = ""

    init(name: String, artist: String) {
        self.name = name
        self.artist = artist
    }
}

@Entity
final class AlbumArt {
    var id: Id = 0
    var data: Data? = nil
    var album: ToOne<Album> = nil
}

@Entity
final class Parent {
    var id: Id = 0
    var name = ""
    @Backlink(\Child.parent) var children: ToMany<Child> = nil

    init(name: String) { self.name = name }
}

@Entity
final class Child {
    var id: Id = 0
    var name = ""
    var parent: ToOne<Parent> = nil

    init(name: String, parent: Parent) {
        self.name = name
        self.parent = ToOne(target: parent)
    }
}

// A to-one whose target is a struct entity (held in a box by the relation).

@Entity
struct Badge {
    var id: Id = 0
    var label = ""
}

@Entity
final class BadgeHolder {
    var id: Id = 0
    var name = ""
    var badge: ToOne<Badge> = nil
}
