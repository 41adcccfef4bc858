//! Open buffers and positions. The editor counts columns in the negotiated encoding
//! (UTF-16 unless it offers UTF-8 or UTF-32); the compiler counts bytes. Every
//! conversion between the two happens here, on the text the offsets belong to.

use std::path::PathBuf;

use lsp_types::{Position, PositionEncodingKind, Range, TextDocumentContentChangeEvent};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Encoding {
    Utf8,
    Utf16,
    Utf32,
}

impl Encoding {
    /// UTF-8 if the client offers it (no conversion at all), else UTF-32 if offered,
    /// else UTF-16, which every client supports.
    pub fn negotiate(offered: Option<&[PositionEncodingKind]>) -> Encoding {
        let offered = offered.unwrap_or(&[]);
        if offered.contains(&PositionEncodingKind::UTF8) {
            Encoding::Utf8
        } else if offered.contains(&PositionEncodingKind::UTF32) {
            Encoding::Utf32
        } else {
            Encoding::Utf16
        }
    }

    pub fn kind(self) -> PositionEncodingKind {
        match self {
            Encoding::Utf8 => PositionEncodingKind::UTF8,
            Encoding::Utf16 => PositionEncodingKind::UTF16,
            Encoding::Utf32 => PositionEncodingKind::UTF32,
        }
    }

    fn width(self, character: char) -> usize {
        match self {
            Encoding::Utf8 => character.len_utf8(),
            Encoding::Utf16 => character.len_utf16(),
            Encoding::Utf32 => 1,
        }
    }
}

/// Line starts of a text, for converting between byte offsets and positions.
pub struct LineIndex<'a> {
    text: &'a [u8],
    starts: Vec<usize>,
}

impl<'a> LineIndex<'a> {
    pub fn new(text: &'a [u8]) -> LineIndex<'a> {
        let mut starts = vec![0];
        starts.extend(
            text.iter()
                .enumerate()
                .filter(|(_, byte)| **byte == b'\n')
                .map(|(index, _)| index + 1),
        );
        LineIndex { text, starts }
    }

    /// The position of a byte offset (clamped to the text; inside a character, the
    /// character's start).
    pub fn position(&self, offset: usize, encoding: Encoding) -> Position {
        let offset = offset.min(self.text.len());
        let line = match self.starts.binary_search(&offset) {
            Ok(line) => line,
            Err(next) => next - 1,
        };
        let start = self.starts[line];
        let prefix = String::from_utf8_lossy(&self.text[start..offset]);
        let column: usize = match encoding {
            // invalid bytes count one each, as the editor shows them
            Encoding::Utf8 => offset - start,
            _ => prefix.chars().map(|c| encoding.width(c)).sum(),
        };
        Position::new(line as u32, column as u32)
    }

    pub fn range(&self, start: usize, end: usize, encoding: Encoding) -> Range {
        Range::new(
            self.position(start, encoding),
            self.position(end.max(start), encoding),
        )
    }

    /// The byte offset of a position (clamped to its line and to the text).
    pub fn offset(&self, position: Position, encoding: Encoding) -> usize {
        let Some(&start) = self.starts.get(position.line as usize) else {
            return self.text.len();
        };
        let end = self
            .starts
            .get(position.line as usize + 1)
            .map(|next| next - 1)
            .unwrap_or(self.text.len());
        let wanted = position.character as usize;
        if encoding == Encoding::Utf8 {
            return (start + wanted).min(end);
        }
        let line = String::from_utf8_lossy(&self.text[start..end]);
        let mut units = 0;
        let mut bytes = 0;
        for character in line.chars() {
            if units >= wanted {
                break;
            }
            units += encoding.width(character);
            bytes += character.len_utf8();
        }
        (start + bytes).min(end)
    }
}

/// An open buffer.
pub struct Document {
    /// Absolute and canonical, as the compiler names files.
    pub path: PathBuf,
    pub version: i32,
    pub text: String,
}

impl Document {
    /// Applies one change (a whole new text, or a range replaced).
    pub fn apply(&mut self, change: TextDocumentContentChangeEvent, encoding: Encoding) {
        match change.range {
            None => self.text = change.text,
            Some(range) => {
                let index = LineIndex::new(self.text.as_bytes());
                let start = index.offset(range.start, encoding);
                let end = index.offset(range.end, encoding).max(start);
                let (start, end) = (
                    floor_char_boundary(&self.text, start),
                    floor_char_boundary(&self.text, end),
                );
                self.text.replace_range(start..end, &change.text);
            }
        }
    }
}

fn floor_char_boundary(text: &str, mut offset: usize) -> usize {
    while offset > 0 && !text.is_char_boundary(offset) {
        offset -= 1;
    }
    offset
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn positions_count_in_the_negotiated_encoding() {
        let text = "a = \"é😀\";\nb";
        let index = LineIndex::new(text.as_bytes());
        let semicolon = text.find(';').expect("semicolon");
        assert_eq!(
            index.position(semicolon, Encoding::Utf8),
            Position::new(0, 12)
        );
        assert_eq!(
            index.position(semicolon, Encoding::Utf16),
            Position::new(0, 9)
        );
        assert_eq!(
            index.position(semicolon, Encoding::Utf32),
            Position::new(0, 8)
        );
        for encoding in [Encoding::Utf8, Encoding::Utf16, Encoding::Utf32] {
            let position = index.position(semicolon, encoding);
            assert_eq!(index.offset(position, encoding), semicolon);
        }
        assert_eq!(
            index.position(text.len(), Encoding::Utf16),
            Position::new(1, 1)
        );
    }

    #[test]
    fn incremental_changes_replace_their_range() {
        let mut document = Document {
            path: PathBuf::from("/r/mesh.nix"),
            version: 1,
            text: "{ x = \"😀\"; }\n".into(),
        };
        document.apply(
            TextDocumentContentChangeEvent {
                range: Some(Range::new(Position::new(0, 10), Position::new(0, 11))),
                range_length: None,
                text: "; y = 2;".into(),
            },
            Encoding::Utf16,
        );
        assert_eq!(document.text, "{ x = \"😀\"; y = 2; }\n");
    }
}
