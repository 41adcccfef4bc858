//! `meshc lsp` driven over stdio with JSON-RPC, as an editor drives it: the real
//! binary, a temporary repository, one client per test. Diagnostics are compared
//! with `meshc check --format json` on every diagnostic fixture (parity).

use std::collections::BTreeSet;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError, channel};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

const MESHC: &str = env!("CARGO_BIN_EXE_meshc");
/// How long a test waits for an answer before it fails.
const PATIENCE: Duration = Duration::from_secs(60);

const INVENTORY: &str = r#"{
  nodes.db1 = {
    key = "age12y52ld3kt27sk7w3rpt4d6n0mpndj2v2u02z7q8ra8sjr0saepcshezt9w";
    modules = [ "web" ];
    settings.web.port = 8081;
  };
}
"#;

const WEB: &str = r#"{ mesh, ... }:
let
  home = "/srv/web";
in
{
  description = "A static website — served on one port";
  requires = [ "networking" ];
  settings.port = mesh.option {
    type = mesh.types.port;
    default = 8080;
    description = "TCP port the site listens on";
  };
  shapes = { settings, ... }: [
    (mesh.user { name = "web"; home = home; })
    (mesh.directory { path = home; owner = "web"; group = "web"; })
    (mesh.service { name = "web"; user = "web"; exec = [ "/usr/bin/python3" "-m" "http.server" (builtins.toString settings.port) ]; })
  ];
}
"#;

/// A repository with one node running `web` (see [`INVENTORY`] and [`WEB`]).
fn repository() -> tempfile::TempDir {
    let directory = tempfile::tempdir().expect("temporary directory");
    std::fs::write(directory.path().join("mesh.nix"), INVENTORY).expect("write mesh.nix");
    std::fs::create_dir_all(directory.path().join("modules/web")).expect("mkdir");
    std::fs::write(directory.path().join("modules/web/module.nix"), WEB).expect("write module");
    directory
}

fn uri(path: &Path) -> String {
    let path = path.canonicalize().unwrap_or_else(|_| path.to_path_buf());
    format!("file://{}", path.display())
}

struct Client {
    child: Child,
    stdin: ChildStdin,
    incoming: Receiver<Value>,
    /// Notifications and server requests seen while waiting for something else.
    backlog: Vec<Value>,
    next_id: i64,
}

fn read_message(reader: &mut impl BufRead) -> Option<Value> {
    let mut length = None;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).ok()? == 0 {
            return None;
        }
        let line = line.trim_end();
        if line.is_empty() {
            break;
        }
        if let Some(value) = line.strip_prefix("Content-Length: ") {
            length = value.parse().ok();
        }
    }
    let mut body = vec![0; length?];
    reader.read_exact(&mut body).ok()?;
    serde_json::from_slice(&body).ok()
}

impl Client {
    /// Starts the server and initializes it; `encodings` are the position encodings
    /// the client offers (none: the protocol's default, UTF-16).
    fn start(encodings: &[&str]) -> (Client, Value) {
        let mut child = Command::new(MESHC)
            .arg("lsp")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("meshc lsp starts");
        let stdin = child.stdin.take().expect("stdin");
        let stdout = child.stdout.take().expect("stdout");
        let (sender, incoming) = channel();
        std::thread::spawn(move || {
            let mut reader = BufReader::new(stdout);
            while let Some(message) = read_message(&mut reader) {
                if sender.send(message).is_err() {
                    break;
                }
            }
        });
        let mut client = Client {
            child,
            stdin,
            incoming,
            backlog: Vec::new(),
            next_id: 1,
        };
        let mut general = json!({});
        if !encodings.is_empty() {
            general = json!({ "positionEncodings": encodings });
        }
        let result = client.request(
            "initialize",
            json!({
                "processId": null,
                "rootUri": null,
                "capabilities": { "general": general, "window": { "workDoneProgress": true } },
            }),
        );
        client.notify("initialized", json!({}));
        (client, result)
    }

    fn send(&mut self, message: &Value) {
        let body = message.to_string();
        self.send_raw(&body);
    }

    fn send_raw(&mut self, body: &str) {
        write!(self.stdin, "Content-Length: {}\r\n\r\n{body}", body.len()).expect("write");
        self.stdin.flush().expect("flush");
    }

    fn notify(&mut self, method: &str, params: Value) {
        self.send(&json!({ "jsonrpc": "2.0", "method": method, "params": params }));
    }

    /// The next message from the server; server requests are answered on the way.
    fn next(&mut self, deadline: Instant) -> Value {
        let timeout = deadline.saturating_duration_since(Instant::now());
        let message = match self.incoming.recv_timeout(timeout) {
            Ok(message) => message,
            Err(RecvTimeoutError::Timeout) => panic!("the server did not answer in time"),
            Err(RecvTimeoutError::Disconnected) => panic!("the server went away"),
        };
        if message.get("method").is_some() && message.get("id").is_some() {
            let id = message["id"].clone();
            self.send(&json!({ "jsonrpc": "2.0", "id": id, "result": null }));
        }
        message
    }

    /// Sends a request and waits for its response, keeping what else arrives.
    fn response(&mut self, method: &str, params: Value) -> Value {
        let id = self.next_id;
        self.next_id += 1;
        self.send(&json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params }));
        self.wait_response(json!(id))
    }

    fn wait_response(&mut self, id: Value) -> Value {
        let deadline = Instant::now() + PATIENCE;
        loop {
            let message = self.next(deadline);
            if message.get("method").is_none() && message["id"] == id {
                return message;
            }
            self.backlog.push(message);
        }
    }

    fn request(&mut self, method: &str, params: Value) -> Value {
        let response = self.response(method, params);
        assert!(
            response.get("error").is_none(),
            "{method} failed: {response}"
        );
        response["result"].clone()
    }

    /// Waits until an analysis ends (its progress report ends) and returns every
    /// diagnostics publication received since the last call, last per file.
    fn analysed(&mut self) -> std::collections::BTreeMap<String, Vec<Value>> {
        let messages = self.analysed_messages();
        let mut files = std::collections::BTreeMap::new();
        for message in messages {
            if message["method"] == "textDocument/publishDiagnostics" {
                let params = &message["params"];
                let uri = params["uri"].as_str().expect("uri").to_string();
                let diagnostics = params["diagnostics"]
                    .as_array()
                    .cloned()
                    .unwrap_or_default();
                files.insert(uri, diagnostics);
            }
        }
        files
    }

    /// Waits until an analysis ends and returns every message received since the
    /// last call.
    fn analysed_messages(&mut self) -> Vec<Value> {
        let deadline = Instant::now() + PATIENCE;
        let mut messages = std::mem::take(&mut self.backlog);
        let mut ended = messages
            .iter()
            .any(|m| m["method"] == "$/progress" && m["params"]["value"]["kind"] == "end");
        while !ended {
            let message = self.next(deadline);
            ended =
                message["method"] == "$/progress" && message["params"]["value"]["kind"] == "end";
            messages.push(message);
        }
        messages
    }

    fn open(&mut self, path: &Path, text: &str) {
        self.notify(
            "textDocument/didOpen",
            json!({ "textDocument": {
                "uri": uri(path), "languageId": "nix", "version": 1, "text": text,
            }}),
        );
    }

    fn change(&mut self, path: &Path, version: i64, text: &str) {
        self.notify(
            "textDocument/didChange",
            json!({
                "textDocument": { "uri": uri(path), "version": version },
                "contentChanges": [ { "text": text } ],
            }),
        );
    }

    fn shutdown(mut self) {
        self.request("shutdown", Value::Null);
        self.notify("exit", Value::Null);
        let deadline = Instant::now() + PATIENCE;
        loop {
            if let Some(status) = self.child.try_wait().expect("wait") {
                assert!(status.success(), "meshc lsp exited with {status}");
                return;
            }
            assert!(Instant::now() < deadline, "meshc lsp did not exit");
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

impl Drop for Client {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Position of the `occurrence`-th (0-based) `needle` in `text`, as UTF-16 line and
/// character, plus `shift` characters.
fn position_of(text: &str, needle: &str, shift: usize) -> Value {
    let offset = text.find(needle).expect("needle in text");
    let line = text[..offset].matches('\n').count();
    let line_start = text[..offset].rfind('\n').map(|i| i + 1).unwrap_or(0);
    let character = text[line_start..offset].encode_utf16().count() + shift;
    json!({ "line": line, "character": character })
}

fn document_position(path: &Path, text: &str, needle: &str, shift: usize) -> Value {
    json!({
        "textDocument": { "uri": uri(path) },
        "position": position_of(text, needle, shift),
    })
}

#[test]
fn a_syntax_error_is_published_with_its_range_and_clears_when_fixed() {
    let repository = repository();
    let module = repository.path().join("modules/web/module.nix");
    let (mut client, initialized) = Client::start(&[]);
    assert_eq!(initialized["capabilities"]["positionEncoding"], "utf-16");
    let broken = WEB.replace("served on one port\";", "served on one port\";;");
    client.open(&module, &broken);
    let files = client.analysed();
    let diagnostics = &files[&uri(&module)];
    assert_eq!(diagnostics.len(), 1, "{diagnostics:?}");
    assert_eq!(diagnostics[0]["code"], "E001");
    assert_eq!(diagnostics[0]["source"], "meshc");
    // line 6, after `—` (three bytes, one UTF-16 unit): character 56, not byte 58
    assert_eq!(
        diagnostics[0]["range"],
        json!({ "start": { "line": 5, "character": 56 }, "end": { "line": 5, "character": 57 } })
    );
    client.change(&module, 2, WEB);
    let files = client.analysed();
    assert_eq!(files.get(&uri(&module)), Some(&Vec::new()), "{files:?}");
    client.shutdown();
}

#[test]
fn ranges_follow_the_negotiated_encoding() {
    let repository = repository();
    let module = repository.path().join("modules/web/module.nix");
    let broken = WEB.replace("served on one port\";", "served on one port\";;");
    for (offered, chosen, character) in [
        (vec!["utf-8", "utf-16"], "utf-8", 58),
        (vec!["utf-32"], "utf-32", 56),
        (vec!["utf-16"], "utf-16", 56),
    ] {
        let (mut client, initialized) = Client::start(&offered);
        assert_eq!(initialized["capabilities"]["positionEncoding"], chosen);
        client.open(&module, &broken);
        let files = client.analysed();
        let diagnostic = &files[&uri(&module)][0];
        assert_eq!(
            diagnostic["range"]["start"]["character"], character,
            "{chosen}"
        );
        client.shutdown();
    }
}

#[test]
fn an_error_in_another_file_is_published_there_and_cleared() {
    let repository = repository();
    let inventory = repository.path().join("mesh.nix");
    let module = repository.path().join("modules/web/module.nix");
    let (mut client, _) = Client::start(&[]);
    // the module asks for a setting the inventory does not give: the error is in
    // the inventory, the edit in the module
    client.open(&inventory, INVENTORY);
    assert!(client.analysed().values().all(Vec::is_empty));
    client.open(&module, &WEB.replace("port = mesh", "portt = mesh"));
    let files = client.analysed();
    let diagnostics = &files[&uri(&inventory)];
    assert_eq!(diagnostics[0]["code"], "E200", "{diagnostics:?}");
    assert_eq!(
        diagnostics[0]["range"]["start"],
        position_of(INVENTORY, "port = 8081", 0)
    );
    client.change(&module, 2, WEB);
    let files = client.analysed();
    assert_eq!(files.get(&uri(&inventory)), Some(&Vec::new()), "{files:?}");
    client.shutdown();
}

#[test]
fn a_trace_is_logged_with_its_location() {
    let repository = repository();
    let module = repository.path().join("modules/web/module.nix");
    let (mut client, _) = Client::start(&[]);
    let traced = WEB.replace(
        "home = \"/srv/web\";",
        "home = builtins.trace \"web read\" \"/srv/web\";",
    );
    assert_ne!(traced, WEB);
    std::fs::write(&module, &traced).expect("write module");
    client.open(&module, &traced);
    let messages = client.analysed_messages();
    let logged: Vec<&str> = messages
        .iter()
        .filter(|m| m["method"] == "window/logMessage")
        .filter_map(|m| m["params"]["message"].as_str())
        .collect();
    let line = traced
        .lines()
        .position(|line| line.contains("web read"))
        .expect("the trace's line")
        + 1;
    let column = traced
        .lines()
        .nth(line - 1)
        .expect("line")
        .find("builtins.trace")
        .expect("call")
        + 1;
    let expected = format!("trace: web read (modules/web/module.nix:{line}:{column})");
    assert!(logged.contains(&expected.as_str()), "{logged:?}");
    client.shutdown();
}

fn hover_text(result: &Value) -> String {
    result["contents"]["value"]
        .as_str()
        .unwrap_or_else(|| panic!("no hover: {result}"))
        .to_string()
}

#[test]
fn hover_shows_settings_modules_and_builtins() {
    let repository = repository();
    let inventory = repository.path().join("mesh.nix");
    let module = repository.path().join("modules/web/module.nix");
    let (mut client, _) = Client::start(&[]);
    client.open(&inventory, INVENTORY);
    client.open(&module, WEB);
    client.analysed();

    let hover = client.request(
        "textDocument/hover",
        document_position(&inventory, INVENTORY, "port = 8081", 1),
    );
    let text = hover_text(&hover);
    assert!(text.contains("`web.port`"), "{text}");
    assert!(text.contains("type: `port`"), "{text}");
    assert!(text.contains("default: `8080`"), "{text}");
    assert!(text.contains("TCP port the site listens on"), "{text}");
    assert_eq!(
        hover["range"]["start"],
        position_of(INVENTORY, "port = 8081", 0)
    );

    let text = hover_text(&client.request(
        "textDocument/hover",
        document_position(&module, WEB, "port = mesh", 2),
    ));
    assert!(text.contains("type: `port`"), "{text}");

    let text = hover_text(&client.request(
        "textDocument/hover",
        document_position(&inventory, INVENTORY, "\"web\"", 2),
    ));
    assert!(
        text.contains("A static website — served on one port"),
        "{text}"
    );

    let text = hover_text(&client.request(
        "textDocument/hover",
        document_position(&module, WEB, "\"networking\"", 3),
    ));
    assert!(text.contains("standard module"), "{text}");

    let text = hover_text(&client.request(
        "textDocument/hover",
        document_position(&module, WEB, "toString settings", 2),
    ));
    assert!(
        text.contains("builtins.toString") || text.contains("toString value"),
        "{text}"
    );

    let nothing = client.request(
        "textDocument/hover",
        document_position(&module, WEB, "\"/srv/web\"", 3),
    );
    assert_eq!(nothing, Value::Null);
    client.shutdown();
}

/// A made-up age private key: the blotting goes by its prefix and bech32 body.
const PRIVATE_KEY: &str =
    "AGE-SECRET-KEY-1QQPZRY9X8GF2TVDW0S3JN54KHCE6MUA7LQPZRY9X8GF2TVDW0S3JN54KHCE";

#[test]
fn a_private_key_in_a_modules_text_is_blotted_out_of_hover_completion_and_diagnostics() {
    let repository = repository();
    std::fs::write(repository.path().join("stray.key"), PRIVATE_KEY).expect("stray.key");
    let inventory = repository.path().join("mesh.nix");
    let module = repository.path().join("modules/web/module.nix");
    let leaky = WEB
        .replace(
            "  shapes = { settings, ... }: [",
            "  settings.note = mesh.option { type = mesh.types.str; default = builtins.readFile ../../stray.key; description = \"A note\"; };\n  shapes = { settings, ... }: builtins.addErrorContext \"while reading ${builtins.readFile ../../stray.key}\" (throw \"no\") ++ [",
        );
    assert_ne!(leaky, WEB);
    let noted = INVENTORY.replace(
        "settings.web.port = 8081;",
        "settings.web.port = 8081;\n    settings.web.note = \"n\";",
    );
    assert_ne!(noted, INVENTORY);
    std::fs::write(&module, &leaky).expect("write module");
    std::fs::write(&inventory, &noted).expect("write mesh.nix");
    let (mut client, _) = Client::start(&[]);
    client.open(&inventory, &noted);
    client.open(&module, &leaky);
    let mut seen = client.analysed_messages();
    // the module's error, with the context it gave
    let thrown = seen
        .iter()
        .filter(|m| m["method"] == "textDocument/publishDiagnostics")
        .flat_map(|m| {
            m["params"]["diagnostics"]
                .as_array()
                .cloned()
                .unwrap_or_default()
        })
        .find(|d| d["code"] == "E029")
        .unwrap_or_else(|| panic!("no E029 in {seen:?}"));
    let related = thrown["relatedInformation"].to_string();
    assert!(related.contains("while reading ****"), "{related}");

    let hover = client.request(
        "textDocument/hover",
        document_position(&inventory, &noted, "note = ", 1),
    );
    let text = hover_text(&hover);
    assert!(text.contains("`web.note`"), "{text}");
    assert!(text.contains("default: `\"****"), "{text}");
    seen.push(hover);

    let typing = noted.replace("settings.web.note = \"n\";", "settings.web.no");
    client.change(&inventory, 2, &typing);
    let completion = client.request(
        "textDocument/completion",
        document_position(
            &inventory,
            &typing,
            "settings.web.no",
            "settings.web.no".len(),
        ),
    );
    assert_eq!(labels(&completion), BTreeSet::from(["note".to_string()]));
    seen.push(completion);

    let everything = Value::Array(seen).to_string().to_lowercase();
    let key = PRIVATE_KEY.to_lowercase();
    for start in 0..=key.len() - 8 {
        let piece = &key[start..start + 8];
        assert!(
            !everything.contains(piece),
            "the editor was sent part of the private key ({piece}): {everything}"
        );
    }
    client.shutdown();
}

#[test]
fn definition_goes_to_modules_settings_and_bindings() {
    let repository = repository();
    let inventory = repository.path().join("mesh.nix");
    let module = repository.path().join("modules/web/module.nix");
    let (mut client, _) = Client::start(&[]);
    client.open(&inventory, INVENTORY);
    client.open(&module, WEB);
    client.analysed();

    let location = client.request(
        "textDocument/definition",
        document_position(&inventory, INVENTORY, "\"web\"", 1),
    );
    assert_eq!(location["uri"], uri(&module));
    assert_eq!(
        location["range"]["start"],
        json!({ "line": 0, "character": 0 })
    );

    let location = client.request(
        "textDocument/definition",
        document_position(&inventory, INVENTORY, "port = 8081", 0),
    );
    assert_eq!(location["uri"], uri(&module));
    assert_eq!(
        location["range"]["start"],
        position_of(WEB, "port = mesh", 0)
    );

    // `home` in `path = home;` is bound by the `let`
    let location = client.request(
        "textDocument/definition",
        document_position(&module, WEB, "home; owner", 1),
    );
    assert_eq!(location["uri"], uri(&module));
    assert_eq!(
        location["range"]["start"],
        position_of(WEB, "home = \"/srv", 0)
    );

    // `settings.port` in `shapes` is the module's setting
    let location = client.request(
        "textDocument/definition",
        document_position(&module, WEB, "port) ]", 0),
    );
    assert_eq!(
        location["range"]["start"],
        position_of(WEB, "port = mesh", 0)
    );
    client.shutdown();
}

fn labels(result: &Value) -> BTreeSet<String> {
    let items = match result {
        Value::Array(items) => items.clone(),
        other => other["items"].as_array().cloned().unwrap_or_default(),
    };
    items
        .iter()
        .map(|item| item["label"].as_str().expect("label").to_string())
        .collect()
}

#[test]
fn completion_offers_modules_settings_and_builtins() {
    let repository = repository();
    let inventory = repository.path().join("mesh.nix");
    let (mut client, _) = Client::start(&[]);
    client.open(&inventory, INVENTORY);
    client.analysed();

    // each edit types a prefix in place of some text and asks for completion after it
    let cases = [
        (
            "modules = [ \"web\" ];",
            "modules = [ \"web\" \"net",
            "\"net",
            "networking",
        ),
        (
            "settings.web.port = 8081;",
            "settings.web.",
            "settings.web.",
            "port",
        ),
        ("8081", "builtins.toSt", "builtins.toSt", "toString"),
    ];
    for (version, (typed_over, typed, prefix, expected)) in (2..).zip(cases) {
        let typing = INVENTORY.replace(typed_over, typed);
        client.change(&inventory, version, &typing);
        let result = client.request(
            "textDocument/completion",
            document_position(&inventory, &typing, prefix, prefix.len()),
        );
        assert_eq!(
            labels(&result),
            BTreeSet::from([expected.to_string()]),
            "after `{prefix}`"
        );
    }
    client.shutdown();
}

#[test]
fn a_module_that_does_not_terminate_does_not_stop_the_server() {
    let repository = repository();
    let module = repository.path().join("modules/web/module.nix");
    let endless = WEB.replace(
        "home = \"/srv/web\";",
        "home = let spin = n: if n < 2 then \"/srv/web\" else builtins.substring 0 8 (spin (n - 1) + spin (n - 2)); in spin 200;",
    );
    let (mut client, _) = Client::start(&[]);
    client.open(&module, &endless);
    // the analysis is running: requests are still answered, at once
    let started = Instant::now();
    let hover = client.request(
        "textDocument/hover",
        document_position(&module, &endless, "toString settings", 2),
    );
    assert!(hover_text(&hover).contains("toString"));
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
    // and the analysis ends with the budget exhausted, reported once
    let files = client.analysed();
    let codes: Vec<&Value> = files
        .values()
        .flatten()
        .map(|diagnostic| &diagnostic["code"])
        .collect();
    assert_eq!(codes, [&json!("E043")], "{files:?}");
    client.shutdown();
}

/// A module that reads a named pipe gets an error (E035) and the server goes on
/// analysing. Reading one waits for its writer: the analysis waited for ever and
/// no edit after it was analysed (a build reads one, as Nix does).
#[test]
fn a_module_reading_a_named_pipe_gets_an_error_and_the_analysis_goes_on() {
    let repository = repository();
    let pipe = repository.path().join("modules/web/pipe");
    let made = Command::new("mkfifo")
        .arg(&pipe)
        .status()
        .expect("mkfifo runs");
    assert!(made.success());
    let module = repository.path().join("modules/web/module.nix");
    let reading = WEB.replace("home = \"/srv/web\";", "home = builtins.readFile ./pipe;");
    assert_ne!(reading, WEB);
    let (mut client, _) = Client::start(&[]);
    client.open(&module, &reading);
    let files = client.analysed();
    let diagnostics: Vec<&Value> = files.values().flatten().collect();
    assert_eq!(diagnostics.len(), 1, "{files:?}");
    assert_eq!(diagnostics[0]["code"], json!("E035"), "{files:?}");
    assert!(
        diagnostics[0]["message"]
            .as_str()
            .is_some_and(|message| message.contains("named pipe")),
        "{files:?}"
    );
    client.change(&module, 2, WEB);
    let files = client.analysed();
    assert!(files.values().all(Vec::is_empty), "{files:?}");
    client.shutdown();
}

#[test]
fn malformed_messages_get_errors_and_the_server_goes_on() {
    let repository = repository();
    let inventory = repository.path().join("mesh.nix");
    let (mut client, _) = Client::start(&[]);
    client.send_raw("{ this is not json");
    let parse_error = client.wait_response(Value::Null);
    assert_eq!(parse_error["error"]["code"], -32700);
    let invalid = client.response("textDocument/hover", json!({ "textDocument": 3 }));
    assert_eq!(invalid["error"]["code"], -32602, "{invalid}");
    let unknown = client.response("textDocument/frobnicate", json!({}));
    assert_eq!(unknown["error"]["code"], -32601, "{unknown}");
    client.open(&inventory, INVENTORY);
    client.analysed();
    let hover = client.request(
        "textDocument/hover",
        document_position(&inventory, INVENTORY, "\"web\"", 2),
    );
    assert!(hover_text(&hover).contains("web"));
    client.shutdown();
}

#[test]
fn a_file_outside_any_repository_gets_its_own_errors() {
    let directory = tempfile::tempdir().expect("temporary directory");
    let file = directory.path().join("alone.nix");
    let text = "let x = 1; in y\n";
    std::fs::write(&file, text).expect("write");
    let (mut client, _) = Client::start(&[]);
    client.open(&file, text);
    let deadline = Instant::now() + PATIENCE;
    let diagnostics = loop {
        let message = client.next(deadline);
        if message["method"] == "textDocument/publishDiagnostics" {
            break message["params"]["diagnostics"].clone();
        }
    };
    assert_eq!(diagnostics[0]["code"], "E010", "{diagnostics}");
    assert_eq!(diagnostics[0]["range"]["start"], position_of(text, "y", 0));
    client.shutdown();
}

/// Every fixture repository under `tests/data/*/*/` that has an inventory.
fn fixtures() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data");
    let mut cases = Vec::new();
    for area in std::fs::read_dir(&root).expect("tests/data") {
        let area = area.expect("entry").path();
        if !area.is_dir() {
            continue;
        }
        for case in std::fs::read_dir(&area).expect("area") {
            let case = case.expect("entry").path();
            if case.is_dir() {
                cases.push(case);
            }
        }
    }
    cases.sort();
    cases
}

/// A UTF-16 position of a byte offset in a file.
fn utf16_position(text: &[u8], offset: usize) -> (u64, u64) {
    let before = &text[..offset.min(text.len())];
    let line = before.iter().filter(|b| **b == b'\n').count();
    let line_start = before
        .iter()
        .rposition(|b| *b == b'\n')
        .map(|i| i + 1)
        .unwrap_or(0);
    let column = String::from_utf8_lossy(&before[line_start..])
        .encode_utf16()
        .count();
    (line as u64, column as u64)
}

type Key = (String, String, (u64, u64), (u64, u64));

/// What `meshc check --format json` reports, as (file, code, start, end). A
/// diagnostic without a place in a file of the repository is the inventory's.
fn check_diagnostics(case: &Path) -> BTreeSet<Key> {
    let output = Command::new(MESHC)
        .args(["check", "--format", "json", "--repo"])
        .arg(case)
        .output()
        .expect("meshc check runs");
    let reported: Vec<Value> = serde_json::from_slice(&output.stdout).expect("JSON");
    reported
        .iter()
        .map(|diagnostic| {
            let code = diagnostic["code"].as_str().expect("code").to_string();
            let primary = &diagnostic["primary"];
            let file = primary["file"].as_str().unwrap_or("");
            if primary.is_null() || file.starts_with("<stdlib>") {
                return ("mesh.nix".into(), code, (0, 0), (0, 0));
            }
            let text = std::fs::read(case.join(file)).expect("the file is in the fixture");
            let start = primary["start"].as_u64().expect("start") as usize;
            let end = primary["end"].as_u64().expect("end") as usize;
            (
                file.to_string(),
                code,
                utf16_position(&text, start),
                utf16_position(&text, end),
            )
        })
        .collect()
}

#[test]
fn diagnostics_equal_meshc_check_on_every_fixture() {
    let (mut client, _) = Client::start(&[]);
    let mut compared = 0;
    for case in fixtures() {
        let inventory = case.join("mesh.nix");
        let expected = check_diagnostics(&case);
        if !inventory.is_file() {
            // no repository: `meshc check` says so, the editor has nothing to attach it to
            assert!(
                expected.iter().all(|(_, code, _, _)| code == "E100"),
                "{}: {expected:?}",
                case.display()
            );
            continue;
        }
        let text = std::fs::read_to_string(&inventory).expect("inventory");
        client.open(&inventory, &text);
        let files = client.analysed();
        let root = case.canonicalize().expect("canonical");
        let mut published = BTreeSet::new();
        for (file_uri, diagnostics) in &files {
            let path = PathBuf::from(file_uri.strip_prefix("file://").expect("file URI"));
            let relative = path
                .strip_prefix(&root)
                .unwrap_or_else(|_| panic!("{file_uri} is outside {}", root.display()))
                .display()
                .to_string();
            for diagnostic in diagnostics {
                let position = |end: &str| {
                    let point = &diagnostic["range"][end];
                    (
                        point["line"].as_u64().expect("line"),
                        point["character"].as_u64().expect("character"),
                    )
                };
                published.insert((
                    relative.clone(),
                    diagnostic["code"].as_str().expect("code").to_string(),
                    position("start"),
                    position("end"),
                ));
            }
        }
        assert_eq!(published, expected, "{}", case.display());
        client.notify(
            "textDocument/didClose",
            json!({ "textDocument": { "uri": uri(&inventory) } }),
        );
        client.analysed();
        compared += 1;
    }
    // every fixture but `no-mesh-nix` is a repository
    assert!(compared >= 85, "only {compared} fixtures compared");
    client.shutdown();
}

/// `Content-Length: 99999999999999999` made the server allocate that much and abort.
/// Now the body is skipped unread (here: to the end of input) and the server ends by
/// itself, saying why.
#[test]
fn a_lying_content_length_ends_the_server_without_an_abort() {
    let mut child = Command::new(MESHC)
        .arg("lsp")
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("meshc lsp starts");
    let mut stdin = child.stdin.take().expect("stdin");
    write!(stdin, "Content-Length: 99999999999999999\r\n\r\n{{}}").expect("write");
    drop(stdin);
    let output = child.wait_with_output().expect("meshc lsp ends");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.code().is_some(),
        "killed by a signal: {stderr}"
    );
    assert!(stderr.contains("over the limit"), "{stderr}");
}

/// A message over 64 MiB is answered with an error, without being held, and the
/// server goes on.
#[test]
fn an_oversized_message_gets_an_error_and_the_server_goes_on() {
    let repository = repository();
    let inventory = repository.path().join("mesh.nix");
    let (mut client, _) = Client::start(&[]);
    let oversized = " ".repeat((64 << 20) + 1);
    client.send_raw(&oversized);
    let error = client.wait_response(Value::Null);
    assert_eq!(error["error"]["code"], -32700, "{error}");
    assert!(
        error["error"]["message"]
            .as_str()
            .is_some_and(|message| message.contains("over the limit")),
        "{error}"
    );
    client.open(&inventory, INVENTORY);
    client.analysed();
    let hover = client.request(
        "textDocument/hover",
        document_position(&inventory, INVENTORY, "\"web\"", 2),
    );
    assert!(hover_text(&hover).contains("web"));
    client.shutdown();
}

/// The main loop parsed every edited buffer before reading the next message, so a
/// large buffer held `shutdown` (and everything else) until it was parsed and its
/// syntax errors published. Parsing is now the syntax worker's: `shutdown` is
/// answered first.
#[test]
fn shutdown_is_answered_while_a_large_buffer_is_parsed() {
    let repository = repository();
    let module = repository.path().join("modules/web/module.nix");
    // about 8 MB, with a syntax error at its end
    let large = format!("[ {} ;", "1 ".repeat(4_000_000));
    let (mut client, _) = Client::start(&[]);
    client.open(&module, &large);
    let response = client.response("shutdown", Value::Null);
    assert!(response.get("error").is_none(), "{response}");
    let published_first = client
        .backlog
        .iter()
        .any(|message| message["method"] == "textDocument/publishDiagnostics");
    assert!(
        !published_first,
        "diagnostics came before the shutdown answer"
    );
    client.notify("exit", Value::Null);
    assert_exits_successfully(&mut client);
}

/// A module whose evaluation runs to the budget is being analysed: `shutdown` is
/// answered before the analysis ends, and `exit` ends the server (the analysis
/// notices it is cancelled instead of running to its budget).
#[test]
fn shutdown_is_answered_while_a_heavy_module_is_analysed() {
    let repository = repository();
    let module = repository.path().join("modules/web/module.nix");
    let heavy = WEB.replace(
        "home = \"/srv/web\";",
        "home = let fib = n: if n < 2 then \"/srv/web\" else builtins.substring 0 8 (fib (n - 1) + fib (n - 2)); in fib 200;",
    );
    let (mut client, _) = Client::start(&[]);
    client.open(&module, &heavy);
    let response = client.response("shutdown", Value::Null);
    assert!(response.get("error").is_none(), "{response}");
    let analysed_first = client
        .backlog
        .iter()
        .any(|message| message["method"] == "textDocument/publishDiagnostics");
    assert!(
        !analysed_first,
        "the analysis ended before the shutdown answer"
    );
    // after `shutdown`, a request is refused; the answer to the server's progress
    // request, still on its way, made the server fail ("unexpected message during
    // shutdown") and exit with status 1
    let refused = client.response(
        "textDocument/hover",
        document_position(&module, &heavy, "fib", 0),
    );
    assert_eq!(refused["error"]["code"], -32600, "{refused}");
    client.notify("exit", Value::Null);
    assert_exits_successfully(&mut client);
}

/// Waits for the server to end after `exit`, with status 0 (the protocol's "exit
/// after shutdown").
fn assert_exits_successfully(client: &mut Client) {
    let deadline = Instant::now() + PATIENCE;
    loop {
        if let Some(status) = client.child.try_wait().expect("wait") {
            assert!(status.success(), "meshc lsp exited with {status}");
            return;
        }
        assert!(Instant::now() < deadline, "meshc lsp did not exit");
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// What `meshc fmt` makes of `text` (formatted in a repository of its own).
fn formatted_by_meshc_fmt(text: &str) -> String {
    let repository = repository();
    let file = repository.path().join("modules/web/module.nix");
    std::fs::write(&file, text).expect("write");
    let output = Command::new(MESHC)
        .args(["fmt", "modules/web/module.nix"])
        .current_dir(repository.path())
        .output()
        .expect("meshc fmt runs");
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    std::fs::read_to_string(&file).expect("readable")
}

fn formatting(client: &mut Client, path: &Path) -> Value {
    client.response(
        "textDocument/formatting",
        json!({
            "textDocument": { "uri": uri(path) },
            "options": { "tabSize": 2, "insertSpaces": true },
        }),
    )
}

#[test]
fn formatting_gives_meshc_fmts_edit_and_none_for_a_formatted_document() {
    let expected = formatted_by_meshc_fmt(WEB);
    assert_ne!(expected, WEB, "the fixture is not in alejandra's style");
    let repository = repository();
    let module = repository.path().join("modules/web/module.nix");
    let (mut client, _) = Client::start(&[]);
    client.open(&module, WEB);
    client.analysed();

    let edits = formatting(&mut client, &module);
    assert!(edits.get("error").is_none(), "{edits}");
    let edits = edits["result"]
        .as_array()
        .cloned()
        .expect("a list of edits");
    assert_eq!(edits.len(), 1, "{edits:?}");
    assert_eq!(edits[0]["newText"], json!(expected));
    let lines = WEB.split('\n').count() - 1;
    assert_eq!(
        edits[0]["range"],
        json!({ "start": { "line": 0, "character": 0 },
                "end": { "line": lines, "character": 0 } }),
        "the edit replaces the whole document"
    );

    // the editor applies it: the document is formatted, and there is nothing to do
    client.change(&module, 2, &expected);
    client.analysed();
    let edits = formatting(&mut client, &module);
    assert_eq!(edits["result"], json!([]), "{edits}");

    // a chain the formatter would take minutes on is refused at once, with E054
    let hostile = format!("f {}\n", vec!["a.b"; 16_000].join(" "));
    client.change(&module, 3, &hostile);
    let started = Instant::now();
    let refused = formatting(&mut client, &module);
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "refusing took {:?}",
        started.elapsed()
    );
    let message = refused["error"]["message"].as_str().unwrap_or_default();
    assert!(message.starts_with("E054: "), "{refused}");
    client.shutdown();
}

/// What the analyses since the last call logged about reuse (`analysis: ...`).
fn reuse_lines(messages: &[Value]) -> Vec<String> {
    messages
        .iter()
        .filter(|m| m["method"] == "window/logMessage")
        .filter_map(|m| m["params"]["message"].as_str())
        .filter(|line| line.starts_with("analysis: "))
        .map(str::to_string)
        .collect()
}

#[test]
fn an_edit_compiles_again_only_the_nodes_that_run_the_edited_module() {
    let repository = repository();
    let inventory = repository.path().join("mesh.nix");
    let module = repository.path().join("modules/web/module.nix");
    // three nodes: two run `web`, the third `cache` (a module of its own)
    let three = r#"{
  nodes.db1 = {
    key = "age12y52ld3kt27sk7w3rpt4d6n0mpndj2v2u02z7q8ra8sjr0saepcshezt9w";
    modules = [ "web" ];
    settings.web.port = 8081;
  };
  nodes.db2 = {
    key = "age12xjejjsy5p5xj3y3hls5u4msyegj2jwdgyjaa4w6v6ylzu4lpdnsv7mdzg";
    modules = [ "web" ];
  };
  nodes.mq1 = {
    key = "age10z6pjstfg0ku6fywxvrn28qfxjve60w3cjzwrqfpwxxcy7fcw9eq8vzwav";
    modules = [ "cache" ];
  };
}
"#;
    std::fs::write(&inventory, three).expect("write mesh.nix");
    std::fs::create_dir_all(repository.path().join("modules/cache")).expect("mkdir");
    std::fs::write(
        repository.path().join("modules/cache/module.nix"),
        "{ mesh, ... }: { shapes = { ... }: [ (mesh.user { name = \"cache\"; }) ]; }\n",
    )
    .expect("write module");
    let (mut client, _) = Client::start(&[]);
    client.open(&module, WEB);
    let messages = client.analysed_messages();
    assert_eq!(
        reuse_lines(&messages),
        ["analysis: 3 nodes compiled again (db1, db2, mq1), 0 reused"]
    );
    // a comment: the nodes that run `web`, and only those
    client.change(&module, 2, &format!("{WEB}# edited\n"));
    let messages = client.analysed_messages();
    assert_eq!(
        reuse_lines(&messages),
        ["analysis: 2 nodes compiled again (db1, db2), 1 reused"]
    );
    // an error in the shapes: published, and the node that said it is made again
    // until it is fixed
    let broken = WEB.replace(
        "(mesh.user { name = \"web\";",
        "(mesh.user { name = throw \"no web user\";",
    );
    assert_ne!(broken, WEB);
    client.change(&module, 3, &broken);
    let messages = client.analysed_messages();
    assert_eq!(
        reuse_lines(&messages),
        ["analysis: 0 nodes compiled again, 1 reused"]
    );
    let published: Vec<&Value> = messages
        .iter()
        .filter(|m| m["method"] == "textDocument/publishDiagnostics")
        .filter(|m| m["params"]["uri"] == uri(&module).as_str())
        .collect();
    let last = published.last().expect("the module's diagnostics");
    assert!(
        last["params"]["diagnostics"]
            .as_array()
            .is_some_and(|diagnostics| !diagnostics.is_empty()),
        "{last}"
    );
    client.change(&module, 4, WEB);
    let files = client.analysed();
    assert_eq!(files.get(&uri(&module)), Some(&Vec::new()), "{files:?}");
    // nothing changed since: every plan reused
    client.change(&module, 5, WEB);
    let messages = client.analysed_messages();
    assert_eq!(
        reuse_lines(&messages),
        ["analysis: 0 nodes compiled again, 3 reused"]
    );
    client.shutdown();
}
