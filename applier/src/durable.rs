//! Durability in batches, so the host stays consistent when the applier is killed or the
//! power fails: new content goes to a temp file beside its target, is made durable, then
//! renamed over it; renames are made durable before the record says they happened. Works
//! on directories the confined layer opened; must never open a path by name.
//!
//! Instead of fsync per file and per directory (about 3 ms each on a virtual disk, 30 s
//! for 10,000 files), a batch of temp files is written, the filesystems are flushed with
//! `syncfs`, the batch is renamed, and they are flushed again. The guarantee is the same:
//! no rename is issued before its content is on disk, and the record is written only
//! after the renames are.

use std::collections::HashMap;
use std::io;

use crate::confined::Directory;

/// Collects the filesystems a batch touched and flushes each of them once.
#[derive(Default)]
pub struct Flusher {
    /// device -> a handle on one directory of it
    devices: HashMap<u64, Directory>,
}

impl Flusher {
    pub fn new() -> Flusher {
        Flusher::default()
    }

    /// Notes that something in `directory` changed.
    pub fn touched(&mut self, directory: &Directory) -> io::Result<()> {
        let device = directory.own_entry()?.device;
        if let std::collections::hash_map::Entry::Vacant(slot) = self.devices.entry(device) {
            slot.insert(directory.duplicate()?);
        }
        Ok(())
    }

    /// Makes everything written on the touched filesystems durable.
    pub fn flush(&self) -> io::Result<()> {
        for directory in self.devices.values() {
            directory.sync_filesystem()?;
        }
        Ok(())
    }

    pub fn is_empty(&self) -> bool {
        self.devices.is_empty()
    }
}
