//! The build cache kept in an editor's memory (`compiler::cache::open_in_memory`,
//! what `meshc lsp` compiles with): an edit makes again only the plans of the nodes
//! it reaches, and every compilation reports exactly what one from nothing reports
//! (plans, diagnostics with their places, traces), over a seeded random sequence of
//! edits to module files and the inventory laid over the files as unsaved buffers.

#[path = "support/repository.rs"]
mod support;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use compiler::cache::Remembered;
use compiler::{Compilation, Options, Session, compile_remembering, compile_session};
use support::homelab;

type Buffers = BTreeMap<PathBuf, Arc<[u8]>>;

/// An editor's session over the example: the memory it keeps between compilations.
#[derive(Default)]
struct Editor {
    memory: Option<Remembered>,
    parses: Arc<lang::ParseCache>,
}

/// What an incremental compilation made again and reused.
#[derive(Debug, PartialEq, Eq)]
struct Reuse {
    again: Vec<String>,
    reused: usize,
    /// The nodes whose first halves were evaluated, and the module files loaded.
    evaluated: Vec<String>,
    loaded: Vec<String>,
}

impl Editor {
    fn compile(&mut self, buffers: &Buffers) -> (Compilation, Reuse) {
        let mut session = Session {
            overlay: Arc::new(buffers.clone()),
            parses: Some(self.parses.clone()),
            ..Session::default()
        };
        let (cache, compilation) = compile_remembering(
            &homelab(),
            self.memory.as_ref(),
            Options::inspect(),
            &mut session,
        );
        self.parses.sweep();
        let reuse = Reuse {
            again: cache.compiled_again(),
            reused: cache.reused(),
            evaluated: cache.evaluated(),
            loaded: cache.loaded_modules(),
        };
        self.memory = cache.remember(&compilation);
        (compilation, reuse)
    }
}

fn from_nothing(buffers: &Buffers) -> Compilation {
    let session = Session {
        overlay: Arc::new(buffers.clone()),
        ..Session::default()
    };
    compile_session(&homelab(), Options::inspect(), &session)
}

/// A place as the editor shows it: the file's path and the byte offsets.
fn place(compilation: &Compilation, span: lang::Span) -> String {
    let file = compilation
        .sources
        .get(span.file)
        .map(|file| {
            file.path
                .as_ref()
                .map(|path| path.display().to_string())
                .unwrap_or_else(|| file.name.clone())
        })
        .unwrap_or_default();
    format!("{file}:{}-{}", span.start, span.end)
}

/// Everything a compilation reports, its places by path (file ids number the files
/// in the order one compilation read them, which is not what is compared).
fn outcome(compilation: &Compilation) -> Vec<String> {
    let mut lines: Vec<String> = compilation
        .plans
        .iter()
        .map(|(node, plan)| {
            format!(
                "plan {node}: {}",
                String::from_utf8_lossy(&plan.to_json_bytes())
            )
        })
        .collect();
    for diagnostic in &compilation.diagnostics {
        let label =
            |label: &lang::Label| format!("{} ({})", place(compilation, label.span), label.message);
        lines.push(format!(
            "diagnostic {} {} {:?} help {:?} at {:?} also {:?} trace {:?}",
            diagnostic.code,
            diagnostic.severity.as_str(),
            diagnostic.message,
            diagnostic.help,
            diagnostic.primary.as_ref().map(label),
            diagnostic.secondary.iter().map(label).collect::<Vec<_>>(),
            diagnostic.trace.iter().map(label).collect::<Vec<_>>(),
        ));
    }
    for traced in &compilation.traces {
        lines.push(format!(
            "trace {:?} {} at {}",
            traced.kind,
            traced.message,
            place(compilation, traced.span)
        ));
    }
    lines
}

fn text(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|error| panic!("{}: {error}", path.display()))
}

/// `original` with `from` replaced by `to` (which must be there).
fn replaced(original: &str, from: &str, to: &str) -> String {
    assert!(original.contains(from), "the example has `{from}`");
    original.replacen(from, to, 1)
}

/// The edits the sequence draws from: each file with the texts it may be given
/// (its own text first).
fn edits() -> Vec<(PathBuf, Vec<String>)> {
    let root = homelab();
    let web = root.join("modules/web/module.nix");
    let shop = root.join("modules/shop/module.nix");
    let inventory = root.join("mesh.nix");
    let (web_text, shop_text, inventory_text) = (text(&web), text(&shop), text(&inventory));
    let web_shapes = "shapes = { settings, ... }: [";
    let shop_shapes = "shapes = { settings, logins, ... }:";
    vec![
        (
            web,
            vec![
                web_text.clone(),
                format!("{web_text}# edited\n"),
                replaced(&web_text, "default = 8080;", "default = 8090;"),
                replaced(&web_text, "default = 8080;", "default = \"eighty\";"),
                replaced(
                    &web_text,
                    web_shapes,
                    "shapes = { settings, ... }: builtins.trace \"web shapes\" [",
                ),
                replaced(
                    &web_text,
                    "(mesh.user { name = \"web\";",
                    "(mesh.user { name = throw \"no web user\";",
                ),
                format!("{web_text}{{"),
            ],
        ),
        (
            shop,
            vec![
                shop_text.clone(),
                format!("{shop_text}# edited\n"),
                replaced(&shop_text, "default = 8000;", "default = 8001;"),
                replaced(&shop_text, "vhost = \"shop\";", "vhost = \"orders\";"),
                replaced(
                    &shop_text,
                    "(mesh.user { name = \"shop\";",
                    "(builtins.trace \"shop shapes\" mesh.user { name = \"shop\";",
                ),
                // a syntax error: the module is left out, and its consumers with it
                replaced(
                    &shop_text,
                    shop_shapes,
                    "shapes = { settings, logins, ... }: builtins.trace \"shop shapes\"",
                ),
            ],
        ),
        (
            inventory,
            vec![
                inventory_text.clone(),
                format!("{inventory_text}# edited\n"),
                replaced(&inventory_text, "title = \"app2\";", "title = \"app2b\";"),
                replaced(&inventory_text, "\"10.0.0.21\"", "\"10.0.0.22\""),
                replaced(
                    &inventory_text,
                    "settings.web.title = \"app1\";",
                    "settings.web.title = builtins.trace \"entry\" \"app1\";",
                ),
                replaced(
                    &inventory_text,
                    "modules = [ \"postgres\"",
                    "modules = [ \"postgress\"",
                ),
            ],
        ),
    ]
}

fn buffer(buffers: &mut Buffers, path: &Path, text: &str) {
    buffers.insert(path.to_path_buf(), Arc::from(text.as_bytes()));
}

fn again(nodes: &[&str]) -> Vec<String> {
    nodes.iter().map(|node| node.to_string()).collect()
}

#[test]
fn an_edit_makes_again_only_the_plans_of_the_nodes_it_reaches() {
    let mut editor = Editor::default();
    let mut buffers = Buffers::new();
    let (first, reuse) = editor.compile(&buffers);
    assert_eq!(outcome(&first), outcome(&from_nothing(&buffers)));
    assert_eq!(
        reuse.reused, 0,
        "the first compilation has nothing to reuse"
    );
    assert_eq!(reuse.again.len(), first.plans.len());
    assert!(
        first.plans.len() >= 5,
        "every node of the example has a plan"
    );

    // nothing changed: every plan reused
    let (_, reuse) = editor.compile(&buffers);
    assert_eq!(reuse.again, Vec::<String>::new());
    assert_eq!(reuse.reused, 5);

    let edits = edits();
    let (web, web_texts) = &edits[0];
    let (shop, shop_texts) = &edits[1];
    let (inventory, inventory_texts) = &edits[2];
    let mut step = |buffers: &Buffers, expected: &[&str]| {
        let (compilation, reuse) = editor.compile(buffers);
        assert_eq!(outcome(&compilation), outcome(&from_nothing(buffers)));
        assert_eq!(reuse.again, again(expected));
        assert_eq!(reuse.reused, 5 - expected.len());
    };
    // a module's file: the nodes that run it
    buffer(&mut buffers, web, &web_texts[1]);
    step(&buffers, &["app1", "app2"]);
    step(&buffers, &[]);
    // shapes that trace are not kept: made again while they trace
    buffer(&mut buffers, shop, &shop_texts[4]);
    step(&buffers, &["app1", "app2"]);
    step(&buffers, &["app1", "app2"]);
    buffer(&mut buffers, shop, &shop_texts[0]);
    step(&buffers, &["app1", "app2"]);
    step(&buffers, &[]);
    // one node's entry in the inventory: that node
    buffer(&mut buffers, inventory, &inventory_texts[2]);
    step(&buffers, &["app2"]);
    // a provider's address: the provider and its consumers (the gateway scrapes
    // its node-exporter)
    buffer(&mut buffers, inventory, &inventory_texts[3]);
    step(&buffers, &["app1", "app2", "db1", "gateway"]);
    // a consumer's declaration: it, and the provider whose grants it changes
    buffer(&mut buffers, shop, &shop_texts[3]);
    step(&buffers, &["app1", "app2", "mq1"]);
}

#[test]
fn incremental_compilations_report_what_compilations_from_nothing_report() {
    let edits = edits();
    let mut editor = Editor::default();
    let mut buffers = Buffers::new();
    let mut reused = 0;
    // a fixed seed: the same sequence every run (xorshift)
    let mut state: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut next = |bound: usize| {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        (state % bound as u64) as usize
    };
    for round in 0..40 {
        let (path, texts) = &edits[next(edits.len())];
        let choice = next(texts.len());
        buffer(&mut buffers, path, &texts[choice]);
        let (compilation, reuse) = editor.compile(&buffers);
        assert_eq!(
            outcome(&compilation),
            outcome(&from_nothing(&buffers)),
            "round {round}: {} as text {choice}",
            path.display()
        );
        reused += reuse.reused;
    }
    assert!(reused > 40, "plans were reused ({reused})");
}

/// The modules a compilation loaded, among `names`.
fn loaded_among(reuse: &Reuse, names: &[&str]) -> Vec<String> {
    names
        .iter()
        .filter(|name| reuse.loaded.iter().any(|loaded| loaded == *name))
        .map(|name| name.to_string())
        .collect()
}

#[test]
fn after_a_silent_compilation_an_edit_evaluates_only_what_it_reaches() {
    let mut editor = Editor::default();
    let mut buffers = Buffers::new();
    let (first, _) = editor.compile(&buffers);
    assert!(
        first.said_nothing(),
        "the example compiles without a word: {:?}",
        outcome(&first)
    );
    let everything = ["web", "shop", "networking", "postgres", "rabbitmq", "proxy"];
    let (_, reuse) = editor.compile(&buffers);
    assert_eq!(
        reuse,
        Reuse {
            again: Vec::new(),
            reused: 5,
            evaluated: Vec::new(),
            loaded: Vec::new(),
        },
        "nothing changed: no node evaluated, no module file loaded"
    );

    let edits = edits();
    let (web, web_texts) = &edits[0];
    let (inventory, inventory_texts) = &edits[2];
    let mut step = |buffers: &Buffers| {
        let (compilation, reuse) = editor.compile(buffers);
        assert_eq!(outcome(&compilation), outcome(&from_nothing(buffers)));
        reuse
    };

    // a comment in `web`: the nodes that run it, and the modules they run
    buffer(&mut buffers, web, &web_texts[1]);
    let reuse = step(&buffers);
    assert_eq!(reuse.evaluated, again(&["app1", "app2"]));
    assert_eq!(
        loaded_among(&reuse, &everything),
        again(&["web", "shop", "networking"]),
        "not the modules of the nodes that do not run `web`"
    );

    // one node's entry: that node alone, and only the modules it runs
    buffer(&mut buffers, inventory, &inventory_texts[2]);
    let reuse = step(&buffers);
    assert_eq!(reuse.evaluated, again(&["app2"]));
    assert_eq!(
        loaded_among(&reuse, &everything),
        again(&["web", "shop", "networking"])
    );

    // `web` now requires a module no node it runs on ran: loaded when resolution
    // asks for it, and the nodes resolved again with it
    let requiring = replaced(
        &web_texts[0],
        "requires = [ \"networking\" ];",
        "requires = [ \"networking\" \"monitoring\" ];",
    );
    buffer(&mut buffers, web, &requiring);
    let reuse = step(&buffers);
    assert_eq!(reuse.evaluated, again(&["app1", "app2"]));
    assert!(
        reuse.loaded.iter().any(|module| module == "monitoring"),
        "{:?}",
        reuse.loaded
    );

    // an error in `web`: it comes from what was evaluated again, and is what a
    // compilation from nothing reports (`step` compares)
    buffer(&mut buffers, web, &web_texts[3]);
    let reuse = step(&buffers);
    assert_eq!(reuse.evaluated, again(&["app1", "app2"]));
    // fixed: what the error reached is evaluated again, and nothing else. The
    // error was the module file's own (E204, said while loading it): the nodes
    // that did not run `web` said nothing and take their declarations back
    buffer(&mut buffers, web, &web_texts[0]);
    let reuse = step(&buffers);
    assert_eq!(reuse.evaluated, again(&["app1", "app2"]));
    assert_eq!(
        loaded_among(&reuse, &everything),
        again(&["web", "shop", "networking"])
    );
    // each edit evaluates exactly the nodes that run `web`:
    let edits_of_web_nodes = [
        // an error a node says of itself (its shapes throw): while it stands, its
        // nodes are evaluated on every edit (even one of the inventory)...
        (web, &web_texts[5]),
        (inventory, &inventory_texts[0]),
        // ...and fixed, only they are
        (web, &web_texts[0]),
        // a syntax error in `web`: the module is left out of the nodes that run
        // it, which say nothing of it themselves but depend on its file all the
        // same; then fixed
        (web, &web_texts[6]),
        (web, &web_texts[0]),
    ];
    for (position, (file, text)) in edits_of_web_nodes.into_iter().enumerate() {
        buffer(&mut buffers, file, text);
        let reuse = step(&buffers);
        assert_eq!(
            reuse.evaluated,
            again(&["app1", "app2"]),
            "edit {position} of the sequence"
        );
    }
    // an error the link says (a misspelt module on the provider of `shop`'s
    // database): placed in other nodes' declarations too, so while it stands
    // every first half is evaluated
    buffer(&mut buffers, inventory, &inventory_texts[5]);
    let reuse = step(&buffers);
    buffer(&mut buffers, inventory, &inventory_texts[0]);
    let reuse_fixed = step(&buffers);
    assert_eq!(
        reuse_fixed.evaluated.len(),
        5,
        "after {:?}: {:?}",
        reuse.evaluated,
        reuse_fixed.evaluated
    );
    // a trace (a shared value traces at the first node that forces it): made
    // again taking only plans from the record, so every node is evaluated
    buffer(&mut buffers, web, &web_texts[4]);
    let reuse = step(&buffers);
    assert_eq!(reuse.evaluated.len(), 5, "{:?}", reuse.evaluated);
}
