//! Source files and byte spans. A span is three integers and never owns text; the
//! source table owns it. Nothing here reads the filesystem.

use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Identifies a file in a [`Sources`] table.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct FileId(pub u32);

/// A byte range in one source file.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct Span {
    pub file: FileId,
    pub start: u32,
    pub end: u32,
}

impl Span {
    pub fn new(file: FileId, start: usize, end: usize) -> Span {
        Span {
            file,
            start: start.min(u32::MAX as usize) as u32,
            end: end.min(u32::MAX as usize) as u32,
        }
    }

    /// The smallest span covering both (they must be in the same file).
    pub fn to(self, other: Span) -> Span {
        Span {
            file: self.file,
            start: self.start.min(other.start),
            end: self.end.max(other.end),
        }
    }

    pub fn len(self) -> usize {
        (self.end - self.start) as usize
    }

    pub fn is_empty(self) -> bool {
        self.end == self.start
    }
}

/// One source text with the name it is shown under and, if it came from a file,
/// its absolute path (used to resolve relative path literals).
#[derive(Debug)]
pub struct SourceFile {
    pub name: String,
    pub path: Option<PathBuf>,
    pub text: Arc<[u8]>,
    /// Where each line starts, found the first time a position is asked for: a
    /// large file read for its values only (an inventory whose entries are taken
    /// from the build cache) is never scanned for them.
    line_starts: std::sync::OnceLock<Vec<u32>>,
}

impl SourceFile {
    pub fn new(name: String, path: Option<PathBuf>, text: Arc<[u8]>) -> SourceFile {
        SourceFile {
            name,
            path,
            text,
            line_starts: std::sync::OnceLock::new(),
        }
    }

    fn line_starts(&self) -> &[u32] {
        self.line_starts.get_or_init(|| {
            let mut line_starts = vec![0];
            line_starts
                .extend(memchr::memchr_iter(b'\n', &self.text).map(|index| index as u32 + 1));
            line_starts
        })
    }

    /// One-based line and one-based column (in bytes) of a byte offset.
    pub fn line_column(&self, offset: u32) -> (usize, usize) {
        let line_index = match self.line_starts().binary_search(&offset) {
            Ok(index) => index,
            Err(index) => index.saturating_sub(1),
        };
        let line_start = self.line_starts().get(line_index).copied().unwrap_or(0);
        (line_index + 1, (offset - line_start) as usize + 1)
    }

    /// One-based line and column counted in UTF-16 code units, as editors count them.
    pub fn line_column_utf16(&self, offset: u32) -> (usize, usize) {
        let (line, _) = self.line_column(offset);
        let line_start = self.line_starts().get(line - 1).copied().unwrap_or(0) as usize;
        let end = (offset as usize).min(self.text.len());
        let prefix = String::from_utf8_lossy(self.text.get(line_start..end).unwrap_or(&[]));
        (line, prefix.encode_utf16().count() + 1)
    }

    /// Byte offset where a zero-based line starts (the text's length past the end).
    pub fn line_start(&self, line: usize) -> usize {
        self.line_starts()
            .get(line)
            .map_or(self.text.len(), |start| *start as usize)
    }

    /// Byte offset of a zero-based line and UTF-16 column (clamped to the text).
    pub fn offset_of_utf16(&self, line: usize, column: usize) -> usize {
        let Some(&line_start) = self.line_starts().get(line) else {
            return self.text.len();
        };
        let line_start = line_start as usize;
        let line_end = self
            .line_starts()
            .get(line + 1)
            .map(|s| *s as usize)
            .unwrap_or(self.text.len());
        let line_text = String::from_utf8_lossy(&self.text[line_start..line_end]);
        let mut units = 0;
        for (byte_index, character) in line_text.char_indices() {
            if units >= column {
                return line_start + byte_index;
            }
            units += character.len_utf16();
        }
        line_end
    }

    pub fn directory(&self) -> Option<&Path> {
        self.path.as_deref().and_then(Path::parent)
    }
}

/// All source files one evaluation has seen, indexed by [`FileId`]. A path maps to
/// the first file read from it.
#[derive(Debug, Default)]
pub struct Sources {
    files: Vec<Arc<SourceFile>>,
    by_path: std::collections::HashMap<PathBuf, FileId>,
}

impl Sources {
    pub fn new() -> Sources {
        Sources::default()
    }

    pub fn add(&mut self, name: String, path: Option<PathBuf>, text: Arc<[u8]>) -> FileId {
        let id = self.next_id();
        if let Some(path) = &path {
            self.by_path.entry(path.clone()).or_insert(id);
        }
        self.files.push(Arc::new(SourceFile::new(name, path, text)));
        id
    }

    /// The id the next file added gets.
    pub fn next_id(&self) -> FileId {
        FileId(self.files.len() as u32)
    }

    pub fn get(&self, id: FileId) -> Option<&Arc<SourceFile>> {
        self.files.get(id.0 as usize)
    }

    /// Gives every file a new display name (the host shows repository-relative names).
    pub fn rename(&mut self, mut name: impl FnMut(&SourceFile) -> String) {
        for file in &mut self.files {
            let new_name = name(file);
            if new_name != file.name {
                *file = Arc::new(SourceFile::new(
                    new_name,
                    file.path.clone(),
                    file.text.clone(),
                ));
            }
        }
    }

    pub fn find_path(&self, path: &Path) -> Option<FileId> {
        self.by_path.get(path).copied()
    }

    pub fn len(&self) -> usize {
        self.files.len()
    }

    pub fn is_empty(&self) -> bool {
        self.files.is_empty()
    }

    pub fn iter(&self) -> impl Iterator<Item = (FileId, &Arc<SourceFile>)> {
        self.files
            .iter()
            .enumerate()
            .map(|(index, file)| (FileId(index as u32), file))
    }
}

#[cfg(test)]
mod tests {
    use super::SourceFile;

    /// Every offset's line and column are the ones counting the newlines before it
    /// gives: empty lines, a first and a last line without a newline, CRLF.
    #[test]
    fn lines_and_columns_are_counted_from_the_newlines() {
        let text = "a\n\nbc\r\n  d\n\u{e9}x\n\nlast";
        let file = SourceFile::new("t".to_string(), None, text.as_bytes().into());
        let (mut line, mut column) = (1, 1);
        for (offset, byte) in text.bytes().enumerate() {
            assert_eq!(
                file.line_column(offset as u32),
                (line, column),
                "at {offset}"
            );
            if byte == b'\n' {
                (line, column) = (line + 1, 1);
            } else {
                column += 1;
            }
        }
        assert_eq!(file.line_column(text.len() as u32), (line, column));
        assert_eq!(file.line_start(2), 3);
    }
}
