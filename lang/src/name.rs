//! Attribute names, interned for the life of the process (Nix's symbols): each
//! distinct name is stored once, so a [`Name`] is one pointer, copied without a
//! reference count, and two names are equal exactly when their pointers are.
//! Names order by their bytes (as Nix prints and lists them), mostly decided by an
//! eight-byte key kept beside the pointer's target, not by reading the bytes.
//!
//! Invariant: no two [`NameData`] hold the same bytes, whichever thread asked.
//! Memory: a name, once made, is never freed (as in Nix's symbol table); names are
//! carved from large blocks under the table's lock, so a short-lived thread keeps
//! no room of its own.

use std::borrow::Borrow;
use std::cell::RefCell;
use std::collections::HashMap;
use std::fmt;
use std::hash::{Hash, Hasher};
use std::sync::Mutex;

use hashbrown::HashTable;

use crate::symbols::NameHasher;

/// An interned attribute name: `Copy`, compared by address, ordered by bytes.
#[derive(Clone, Copy)]
pub struct Name(&'static NameData);

#[derive(Default)]
struct NameData {
    /// The first eight bytes, big-endian, zero-padded: two names whose keys differ
    /// are ordered as their keys are.
    key: u64,
    /// The bytes' hash ([`hash_of`]), kept so that a table grows without reading them.
    hash: u64,
    bytes: &'static [u8],
    /// The name's number, in the order names were made: an index for the
    /// per-thread tables of [`Name::string`].
    id: u32,
}

/// Every name of the process, and the room new ones are carved from: names are
/// made while the lock is held, so no thread keeps half-used room of its own.
struct Store {
    table: HashTable<Name>,
    next_id: u32,
    bytes: &'static mut [u8],
    data: &'static mut [NameData],
}

static STORE: Mutex<Store> = Mutex::new(Store {
    table: HashTable::new(),
    next_id: 0,
    bytes: &mut [],
    data: &mut [],
});

/// Names whose string value a thread keeps ([`Name::string`]); later names' strings
/// are made each time.
const MAX_STRINGS: usize = 1 << 20;

/// Bytes and names taken from the allocator at a time.
const BYTES_CHUNK: usize = 64 * 1024;
const DATA_CHUNK: usize = 2048;

thread_local! {
    /// The names this thread has asked for: most lookups take no lock.
    static LOCAL: RefCell<HashTable<Name>> = const { RefCell::new(HashTable::new()) };
    /// Each name's string value on this thread, by the name's number
    /// ([`Name::string`]): `attrNames` and `mapAttrs` share one copy per name.
    static STRINGS: RefCell<Vec<Option<crate::value::Bytes>>> = const { RefCell::new(Vec::new()) };
    /// Names of `&'static str`s, by the text's address ([`Name::of`]).
    static STATIC: RefCell<HashMap<(usize, usize), Name, crate::value::AddressHash>> =
        RefCell::new(HashMap::default());
}

fn hash_of(bytes: &[u8]) -> u64 {
    let mut hasher = NameHasher::default();
    hasher.write(bytes);
    hasher.finish()
}

impl Store {
    /// The name with these bytes, made if it is new.
    fn intern(&mut self, bytes: &[u8], hash: u64) -> Name {
        if let Some(name) = self.table.find(hash, |name| name.0.bytes == bytes) {
            return *name;
        }
        let stored = self.store_bytes(bytes);
        if self.data.is_empty() {
            let chunk: Vec<NameData> = (0..DATA_CHUNK).map(|_| NameData::default()).collect();
            self.data = Box::leak(chunk.into_boxed_slice());
        }
        let data = std::mem::take(&mut self.data);
        let (slot, rest) = data.split_at_mut(1);
        self.data = rest;
        let slot: &'static mut NameData = &mut slot[0];
        *slot = NameData {
            key: key_of(bytes),
            hash,
            bytes: stored,
            id: self.next_id,
        };
        self.next_id = self.next_id.saturating_add(1);
        let name = Name(slot);
        self.table.insert_unique(hash, name, |name| name.0.hash);
        name
    }

    /// A copy of `bytes` that lives as long as the process.
    fn store_bytes(&mut self, bytes: &[u8]) -> &'static [u8] {
        if bytes.len() > BYTES_CHUNK / 8 {
            return Box::leak(Box::from(bytes));
        }
        if self.bytes.len() < bytes.len() {
            self.bytes = Box::leak(vec![0u8; BYTES_CHUNK].into_boxed_slice());
        }
        let room = std::mem::take(&mut self.bytes);
        let (stored, rest) = room.split_at_mut(bytes.len());
        self.bytes = rest;
        stored.copy_from_slice(bytes);
        stored
    }
}

fn local_find(bytes: &[u8], hash: u64) -> Option<Name> {
    LOCAL.with(|local| {
        local
            .borrow()
            .find(hash, |name| name.0.bytes == bytes)
            .copied()
    })
}

fn local_insert(name: Name) {
    LOCAL.with(|local| {
        local
            .borrow_mut()
            .insert_unique(name.0.hash, name, |name| name.0.hash);
    });
}

fn store() -> std::sync::MutexGuard<'static, Store> {
    STORE
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

impl Name {
    /// The name with these bytes, made if it is new.
    pub fn new(bytes: &[u8]) -> Name {
        let hash = hash_of(bytes);
        if let Some(name) = local_find(bytes, hash) {
            return name;
        }
        let name = store().intern(bytes, hash);
        local_insert(name);
        name
    }

    /// Makes this thread find `names` (interned already, on any thread) without
    /// taking the table's lock: a worker given a file's names by the parse cache
    /// looks each up here when it lowers the file (two workers lowering a
    /// 10,000-entry inventory otherwise took the lock 10,000 times each, in turn).
    pub fn keep_all(names: &[Name]) {
        LOCAL.with(|local| {
            let mut local = local.borrow_mut();
            local.reserve(names.len(), |name| name.0.hash);
            for name in names {
                let hash = name.0.hash;
                if local.find(hash, |kept| kept.same(*name)).is_none() {
                    local.insert_unique(hash, *name, |name| name.0.hash);
                }
            }
        });
    }

    /// The name of a text known when the program was built (a host's field names):
    /// looked up by the text's address after the first time.
    pub fn of(text: &'static str) -> Name {
        let address = (text.as_ptr() as usize, text.len());
        if let Some(name) = STATIC.with(|names| names.borrow().get(&address).copied()) {
            return name;
        }
        let name = Name::new(text.as_bytes());
        STATIC.with(|names| names.borrow_mut().insert(address, name));
        name
    }

    #[inline]
    pub fn as_bytes(self) -> &'static [u8] {
        self.0.bytes
    }

    /// The name as a string value: one copy per name and thread, shared by every
    /// list of names made on it (Nix copies the name each time).
    pub fn string(self) -> crate::value::Bytes {
        let index = self.0.id as usize;
        STRINGS.with(|strings| {
            let mut strings = strings.borrow_mut();
            if let Some(Some(string)) = strings.get(index) {
                return string.clone();
            }
            let string: crate::value::Bytes = crate::value::Bytes::from(self.0.bytes);
            if index < MAX_STRINGS {
                if strings.len() <= index {
                    strings.resize(index + 1, None);
                }
                strings[index] = Some(string.clone());
            }
            string
        })
    }

    /// Whether both are the same name (the same address).
    #[inline]
    pub fn same(self, other: Name) -> bool {
        std::ptr::eq(self.0, other.0)
    }
}

/// The first eight bytes of `bytes` as a big-endian number, zero-padded.
fn key_of(bytes: &[u8]) -> u64 {
    let mut word = [0u8; 8];
    let length = bytes.len().min(8);
    word[..length].copy_from_slice(&bytes[..length]);
    u64::from_be_bytes(word)
}

impl std::ops::Deref for Name {
    type Target = [u8];

    #[inline]
    fn deref(&self) -> &[u8] {
        self.0.bytes
    }
}

impl AsRef<[u8]> for Name {
    fn as_ref(&self) -> &[u8] {
        self.0.bytes
    }
}

/// Equal names are the same name, so a map of names can be searched by bytes.
impl Borrow<[u8]> for Name {
    fn borrow(&self) -> &[u8] {
        self.0.bytes
    }
}

impl PartialEq for Name {
    #[inline]
    fn eq(&self, other: &Name) -> bool {
        self.same(*other)
    }
}

impl Eq for Name {}

impl PartialEq<[u8]> for Name {
    fn eq(&self, other: &[u8]) -> bool {
        self.0.bytes == other
    }
}

impl Hash for Name {
    /// As the bytes hash, so that a map keyed by names finds a name by its bytes.
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.0.bytes.hash(state);
    }
}

impl Ord for Name {
    /// Byte order, as `<[u8]>::cmp`.
    #[inline]
    fn cmp(&self, other: &Name) -> std::cmp::Ordering {
        if self.same(*other) {
            return std::cmp::Ordering::Equal;
        }
        match self.0.key.cmp(&other.0.key) {
            std::cmp::Ordering::Equal => self.0.bytes.cmp(other.0.bytes),
            order => order,
        }
    }
}

impl PartialOrd for Name {
    fn partial_cmp(&self, other: &Name) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl fmt::Debug for Name {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(formatter, "{:?}", String::from_utf8_lossy(self.0.bytes))
    }
}

impl fmt::Display for Name {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str(&String::from_utf8_lossy(self.0.bytes))
    }
}

#[cfg(test)]
mod tests {
    use super::Name;
    use proptest::prelude::*;

    #[test]
    fn the_same_bytes_are_the_same_name_on_every_thread() {
        let here = Name::new(b"services");
        let there = std::thread::spawn(|| Name::new(b"services").as_bytes().as_ptr() as usize)
            .join()
            .unwrap_or(0);
        assert_eq!(here.as_bytes().as_ptr() as usize, there);
        assert!(Name::new(b"services").same(here));
        assert!(!Name::new(b"service").same(here));
        assert!(Name::of("services").same(here));
    }

    proptest! {
        /// Names order as their bytes, whether their keys or their bytes decide
        /// (names longer than eight bytes, names with zero bytes).
        #[test]
        fn names_order_as_their_bytes(
            left in proptest::collection::vec(prop_oneof![Just(0u8), Just(b'a'), Just(b'b'), any::<u8>()], 0..12),
            right in proptest::collection::vec(prop_oneof![Just(0u8), Just(b'a'), Just(b'b'), any::<u8>()], 0..12),
        ) {
            let (left_name, right_name) = (Name::new(&left), Name::new(&right));
            prop_assert_eq!(left_name.cmp(&right_name), left.cmp(&right));
            prop_assert_eq!(left_name == right_name, left == right);
        }
    }
}
