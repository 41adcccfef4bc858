//! The book's commands chapter (`book/src/commands.md`) against the programs' own
//! clap definitions, so that the two never drift: every command of `meshc`,
//! `mesh-apply`, `mesh-build` and `mesh-provision` has its section, every flag and
//! argument of a command is in its section, and every flag a section's table names is
//! one the command has. Reads definitions and text only; runs nothing.

use std::collections::BTreeMap;

use clap::CommandFactory;

/// The chapter's sections: title (the text in the heading's backticks) -> body.
fn sections() -> BTreeMap<String, String> {
    let path = tests::workspace_root().join("book/src/commands.md");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut sections = BTreeMap::new();
    let mut current: Option<(String, String)> = None;
    for line in text.lines() {
        if let Some(heading) = line.strip_prefix("## ") {
            if let Some((title, body)) = current.take() {
                sections.insert(title, body);
            }
            let title = heading.trim().trim_matches('`').to_string();
            current = Some((title, String::new()));
        } else if let Some((_, body)) = current.as_mut() {
            body.push_str(line);
            body.push('\n');
        }
    }
    if let Some((title, body)) = current {
        sections.insert(title, body);
    }
    sections
}

/// Every command of a program, by its full name (`meshc artifacts build`).
fn commands(program: clap::Command) -> Vec<(String, clap::Command)> {
    fn walk(prefix: &str, command: &clap::Command, found: &mut Vec<(String, clap::Command)>) {
        for sub in command.get_subcommands() {
            if sub.get_name() == "help" {
                continue;
            }
            let name = format!("{prefix} {}", sub.get_name());
            found.push((name.clone(), sub.clone()));
            walk(&name, sub, found);
        }
    }
    let mut program = program;
    program.build();
    let name = program.get_name().to_string();
    let mut found = vec![(name.clone(), program.clone())];
    walk(&name, &program, &mut found);
    found
}

fn programs() -> Vec<(String, clap::Command)> {
    [
        meshc::cli::Cli::command(),
        applier::config::command(),
        transport::build_command::Arguments::command(),
        provisioner::config::command(),
    ]
    .into_iter()
    .flat_map(commands)
    .collect()
}

/// The flags the first column of a section's tables names.
fn table_flags(body: &str) -> Vec<String> {
    let mut flags = Vec::new();
    for line in body.lines().filter(|line| line.starts_with("| `")) {
        let first = line.split(" | ").next().unwrap_or_default();
        for piece in first.split('`').skip(1).step_by(2) {
            if let Some(flag) = piece.strip_prefix("--") {
                let name: String = flag
                    .chars()
                    .take_while(|c| c.is_ascii_alphanumeric() || *c == '-')
                    .collect();
                flags.push(name);
            }
        }
    }
    flags
}

/// A command's own flags and arguments as the chapter must show them: `--LONG` for
/// a flag, the value names of an argument; not the help and version flags, not the
/// hidden ones, and a global flag only at the program's own section.
fn documented_arguments(name: &str, command: &clap::Command) -> Vec<String> {
    let is_program = !name.contains(' ');
    command
        .get_arguments()
        .filter(|argument| !argument.is_hide_set())
        .filter(|argument| !["help", "version"].contains(&argument.get_id().as_str()))
        .filter(|argument| is_program || !argument.is_global_set())
        .flat_map(|argument| match argument.get_long() {
            Some(long) => vec![format!("`--{long}")],
            None => argument
                .get_value_names()
                .unwrap_or_default()
                .iter()
                .map(|value| value.to_string())
                .collect(),
        })
        .collect()
}

#[test]
fn every_command_and_every_flag_is_in_the_commands_chapter() {
    let sections = sections();
    let mut checked = 0;
    for (name, command) in programs() {
        let arguments = documented_arguments(&name, &command);
        let Some(body) = sections.get(&name) else {
            // a group of subcommands with nothing of its own is named by them
            assert!(
                arguments.is_empty() && command.has_subcommands(),
                "no section `## \\`{name}\\`` in book/src/commands.md"
            );
            continue;
        };
        for argument in arguments {
            assert!(
                body.contains(&argument),
                "the section of `{name}` does not name {argument}"
            );
            checked += 1;
        }
    }
    assert!(checked > 40, "only {checked} flags checked");
}

#[test]
fn every_flag_the_chapter_names_exists() {
    let sections = sections();
    let programs: BTreeMap<String, clap::Command> = programs().into_iter().collect();
    for (title, body) in &sections {
        let flags = table_flags(body);
        let Some(command) = programs.get(title) else {
            assert!(
                flags.is_empty(),
                "the section `{title}` names flags but is no command: {flags:?}"
            );
            continue;
        };
        for flag in flags {
            assert!(
                command
                    .get_arguments()
                    .any(|argument| argument.get_long() == Some(flag.as_str())),
                "the chapter's `{title}` names `--{flag}`, which it does not have"
            );
        }
    }
}

#[test]
fn the_chapter_reader_finds_sections_and_flags() {
    let sections = sections();
    assert!(
        sections.contains_key("meshc build"),
        "{:?}",
        sections.keys()
    );
    assert!(sections.contains_key("mesh-apply"));
    let flags = table_flags("| `--expr EXPR`, `-E` | | x |\n| `--format human\\|json` | | y |\n");
    assert_eq!(flags, ["expr", "format"]);
}
