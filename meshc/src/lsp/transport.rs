//! JSON-RPC over stdio with `Content-Length` framing, for `meshc lsp`. Unlike
//! `lsp_server::Connection::stdio`, a malformed message does not end the
//! connection: it is answered with a JSON-RPC error (parse error or invalid request)
//! and reading goes on with the next message. Knows nothing of the language server.

use std::io::{self, BufRead, Read, Write};
use std::thread;

use crossbeam_channel::{Receiver, Sender, select, unbounded};
use lsp_server::{Connection, ErrorCode, Message, Notification, Request, RequestId, Response};

/// The threads behind a connection: join the writer after dropping the connection to
/// flush every message sent. The reader is never joined: it may be blocked on stdin.
pub struct Writer {
    handle: thread::JoinHandle<()>,
}

impl Writer {
    pub fn join(self) {
        let _ = self.handle.join();
    }
}

/// A connection over this process's stdin and stdout.
pub fn stdio() -> (Connection, Writer) {
    let (to_writer, from_server) = unbounded::<Message>();
    let (raw_to_writer, raw_from_reader) = unbounded::<serde_json::Value>();
    let (to_server, from_reader) = unbounded::<Message>();
    let handle = thread::Builder::new()
        .name("mesh-lsp-writer".into())
        .spawn(move || write_loop(from_server, raw_from_reader))
        .expect("the writer thread starts");
    let _ = thread::Builder::new()
        .name("mesh-lsp-reader".into())
        .spawn(move || {
            let stdin = io::stdin();
            let mut input = stdin.lock();
            read_loop(&mut input, &to_server, &raw_to_writer);
        });
    (
        Connection {
            sender: to_writer,
            receiver: from_reader,
        },
        Writer { handle },
    )
}

fn write_loop(messages: Receiver<Message>, raw: Receiver<serde_json::Value>) {
    let stdout = io::stdout();
    let mut output = stdout.lock();
    loop {
        select! {
            recv(messages) -> message => match message {
                Ok(message) => {
                    if message.write(&mut output).is_err() {
                        return;
                    }
                }
                Err(_) => return,
            },
            recv(raw) -> value => {
                if let Ok(value) = value
                    && write_raw(&mut output, &value).is_err()
                {
                    return;
                }
            },
        }
    }
}

fn write_raw(output: &mut impl Write, value: &serde_json::Value) -> io::Result<()> {
    let text = value.to_string();
    write!(output, "Content-Length: {}\r\n\r\n{text}", text.len())?;
    output.flush()
}

/// Reads messages until end of input; what cannot be read is answered with an error.
pub fn read_loop(
    input: &mut impl BufRead,
    to_server: &Sender<Message>,
    errors: &Sender<serde_json::Value>,
) {
    loop {
        let body = match read_frame(input) {
            Ok(Some(body)) => body,
            Ok(None) => return,
            Err(problem) => {
                let _ = errors.send(error_response(
                    serde_json::Value::Null,
                    ErrorCode::ParseError,
                    &problem,
                ));
                continue;
            }
        };
        let value: serde_json::Value = match serde_json::from_slice(&body) {
            Ok(value) => value,
            Err(error) => {
                let _ = errors.send(error_response(
                    serde_json::Value::Null,
                    ErrorCode::ParseError,
                    &format!("the message is not JSON: {error}"),
                ));
                continue;
            }
        };
        match classify(value) {
            Ok(Some(message)) => {
                let is_exit = matches!(&message, Message::Notification(n) if n.method == "exit");
                if to_server.send(message).is_err() || is_exit {
                    return;
                }
            }
            Ok(None) => {}
            Err(response) => {
                let _ = errors.send(response);
            }
        }
    }
}

/// The largest message body read (64 MiB): a larger one is skipped unread, so no
/// header can make the server allocate more.
pub const MAX_MESSAGE_BYTES: u64 = 64 << 20;

/// The longest header line read; the rest of a longer one is read as further lines.
const MAX_HEADER_LINE: u64 = 8 << 10;

/// One message's body, or None at the end of input. A frame without a usable
/// `Content-Length` is an error; reading resumes at the next header. A body over
/// [`MAX_MESSAGE_BYTES`] is an error too: its bytes are read and dropped as they
/// come, never held.
fn read_frame(input: &mut impl BufRead) -> Result<Option<Vec<u8>>, String> {
    let mut length: Option<u64> = None;
    let mut saw_header = false;
    loop {
        let mut line = String::new();
        match input.by_ref().take(MAX_HEADER_LINE).read_line(&mut line) {
            Ok(0) => return Ok(None),
            Ok(_) => {}
            Err(error) => {
                if error.kind() == io::ErrorKind::InvalidData {
                    return Err("a header line is not UTF-8".into());
                }
                return Ok(None);
            }
        }
        let line = line.trim_end_matches(['\r', '\n']);
        if line.is_empty() {
            if !saw_header {
                continue;
            }
            break;
        }
        saw_header = true;
        if let Some((name, value)) = line.split_once(':')
            && name.trim().eq_ignore_ascii_case("content-length")
        {
            length = value.trim().parse().ok();
        }
    }
    let Some(length) = length else {
        return Err("a message without a valid `Content-Length` header".into());
    };
    if length > MAX_MESSAGE_BYTES {
        let problem = format!(
            "a message of {length} bytes is over the limit of {MAX_MESSAGE_BYTES} bytes; it is skipped"
        );
        eprintln!("meshc lsp: {problem}");
        // read past it (to the end of input, if the header lied)
        let skipped = io::copy(&mut input.by_ref().take(length), &mut io::sink());
        if skipped.map_or(true, |skipped| skipped < length) {
            return Ok(None);
        }
        return Err(problem);
    }
    let mut body = vec![0; length as usize];
    input
        .read_exact(&mut body)
        .map_err(|error| format!("the message ended early: {error}"))?;
    Ok(Some(body))
}

fn error_response(id: serde_json::Value, code: ErrorCode, message: &str) -> serde_json::Value {
    serde_json::json!({
        "jsonrpc": "2.0",
        "id": id,
        "error": { "code": code as i32, "message": message },
    })
}

/// A JSON value as a request, a notification or a response; an error response for
/// anything else (JSON-RPC's "invalid request").
fn classify(value: serde_json::Value) -> Result<Option<Message>, serde_json::Value> {
    let serde_json::Value::Object(object) = &value else {
        return Err(error_response(
            serde_json::Value::Null,
            ErrorCode::InvalidRequest,
            "a message must be a JSON object",
        ));
    };
    let id = object.get("id").cloned();
    let valid_id = id
        .as_ref()
        .is_some_and(|id| id.is_string() || id.is_i64() || id.is_u64());
    match object.get("method") {
        Some(serde_json::Value::String(method)) => {
            let params = object
                .get("params")
                .cloned()
                .unwrap_or(serde_json::Value::Null);
            match id {
                None => Ok(Some(Message::Notification(Notification {
                    method: method.clone(),
                    params,
                }))),
                Some(id) if valid_id => {
                    let id: RequestId = serde_json::from_value(id.clone()).map_err(|_| {
                        error_response(id, ErrorCode::InvalidRequest, "invalid request id")
                    })?;
                    Ok(Some(Message::Request(Request {
                        id,
                        method: method.clone(),
                        params,
                    })))
                }
                Some(id) => Err(error_response(
                    serde_json::Value::Null,
                    ErrorCode::InvalidRequest,
                    &format!("invalid request id {id}"),
                )),
            }
        }
        Some(_) => Err(error_response(
            if valid_id {
                id.unwrap_or_default()
            } else {
                serde_json::Value::Null
            },
            ErrorCode::InvalidRequest,
            "`method` must be a string",
        )),
        None if valid_id && (object.contains_key("result") || object.contains_key("error")) => {
            Ok(serde_json::from_value::<Response>(value.clone())
                .ok()
                .map(Message::Response))
        }
        None => Err(error_response(
            if valid_id {
                id.unwrap_or_default()
            } else {
                serde_json::Value::Null
            },
            ErrorCode::InvalidRequest,
            "a request needs a `method`",
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `Content-Length: 99999999999999999` aborted the server: it allocated that much.
    #[test]
    fn an_oversized_message_is_skipped_without_being_held() {
        let oversized = MAX_MESSAGE_BYTES + 1;
        let mut input = format!("Content-Length: {oversized}\r\n\r\n").into_bytes();
        input.resize(input.len() + oversized as usize, b' ');
        input.extend(frame(r#"{"jsonrpc":"2.0","id":4,"method":"shutdown"}"#).into_bytes());
        let (to_server, from_reader) = unbounded();
        let (errors, raw) = unbounded();
        read_loop(&mut input.as_slice(), &to_server, &errors);
        let errors: Vec<serde_json::Value> = raw.try_iter().collect();
        assert_eq!(errors.len(), 1, "{errors:?}");
        assert_eq!(errors[0]["error"]["code"], ErrorCode::ParseError as i32);
        assert!(
            errors[0]["error"]["message"]
                .as_str()
                .is_some_and(|message| message.contains("over the limit")),
            "{errors:?}"
        );
        let messages: Vec<Message> = from_reader.try_iter().collect();
        assert!(matches!(&messages[..], [Message::Request(r)] if r.method == "shutdown"));
    }

    #[test]
    fn a_length_past_the_end_of_input_ends_reading() {
        let input = "Content-Length: 99999999999999999\r\n\r\n{}";
        let (to_server, from_reader) = unbounded();
        let (errors, _raw) = unbounded();
        read_loop(&mut input.as_bytes(), &to_server, &errors);
        assert_eq!(from_reader.try_iter().count(), 0);
    }

    #[test]
    fn a_header_line_without_end_is_read_in_bounded_pieces() {
        let mut input = "X-Padding: ".to_string();
        input.push_str(&"a".repeat(1 << 20));
        input.push_str("\r\n");
        input.push_str(&frame(r#"{"jsonrpc":"2.0","id":4,"method":"shutdown"}"#));
        let (to_server, from_reader) = unbounded();
        let (errors, _raw) = unbounded();
        read_loop(&mut input.as_bytes(), &to_server, &errors);
        let messages: Vec<Message> = from_reader.try_iter().collect();
        assert!(matches!(&messages[..], [Message::Request(r)] if r.method == "shutdown"));
    }

    fn frame(body: &str) -> String {
        format!("Content-Length: {}\r\n\r\n{body}", body.len())
    }

    #[test]
    fn malformed_messages_are_answered_and_reading_goes_on() {
        let input = [
            frame("{not json"),
            frame(r#"{"jsonrpc":"2.0","id":3}"#),
            "Content-Type: text\r\n\r\n".to_string(),
            frame(r#"{"jsonrpc":"2.0","id":4,"method":"shutdown"}"#),
        ]
        .concat();
        let (to_server, from_reader) = unbounded();
        let (errors, raw) = unbounded();
        read_loop(&mut input.as_bytes(), &to_server, &errors);
        let errors: Vec<serde_json::Value> = raw.try_iter().collect();
        assert_eq!(errors.len(), 3);
        assert_eq!(errors[0]["error"]["code"], ErrorCode::ParseError as i32);
        assert_eq!(errors[1]["id"], 3);
        assert_eq!(errors[1]["error"]["code"], ErrorCode::InvalidRequest as i32);
        let messages: Vec<Message> = from_reader.try_iter().collect();
        assert!(matches!(&messages[..], [Message::Request(r)] if r.method == "shutdown"));
    }
}
