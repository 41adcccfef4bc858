//! The unit files `mesh-apply` writes: a service's systemd unit and a container's
//! Quadlet file, each a function of the shape's digest-covered fields only (moving a
//! declaration in its module restarts nothing), with systemd's quoting. One
//! definition for the applier, which writes them, and `meshc diff`, which says a
//! unit restarts only when its text changes: plans that differ only where the text
//! does not (`after = [ "db" ]` and `[ "db.service" ]`) restart nothing.

use crate::{Container, Service};

/// A service's systemd unit (`/etc/systemd/system/NAME.service`).
pub fn service_unit(service: &Service) -> String {
    let mut text = format!(
        "# mesh service `{name}`: written by mesh-apply from the node's plan, do not edit\n\
         [Unit]\n\
         Description=mesh service {name}\n",
        name = service.name
    );
    if !service.after.is_empty() {
        let after: Vec<String> = service.after.iter().map(|name| unit_name(name)).collect();
        text.push_str(&format!("After={}\n", after.join(" ")));
        // After= only orders: a target nothing pulls in (`network-online.target`
        // on a host where nothing wants it) is never reached, and ordering against
        // it orders against nothing. Wanting the targets it names pulls them in.
        let targets: Vec<&str> = after
            .iter()
            .map(String::as_str)
            .filter(|unit| unit.ends_with(".target"))
            .collect();
        if !targets.is_empty() {
            text.push_str(&format!("Wants={}\n", targets.join(" ")));
        }
    }
    text.push_str("\n[Service]\n");
    text.push_str(&format!("ExecStart={}\n", command_line(&service.exec)));
    text.push_str(&format!("User={}\n", service.user));
    for (key, value) in &service.environment {
        text.push_str(&format!(
            "Environment={}\n",
            environment_assignment(key, value)
        ));
    }
    text.push_str(&format!("Restart={}\n", service.restart));
    text.push_str("\n[Install]\nWantedBy=multi-user.target\n");
    text
}

/// A container's Quadlet file (`/etc/containers/systemd/NAME.container`).
pub fn container_unit(container: &Container) -> String {
    let mut text = format!(
        "# mesh container `{name}`: written by mesh-apply from the node's plan, do not edit\n\
         [Unit]\n\
         Description=mesh container {name}\n\
         \n\
         [Container]\n\
         ContainerName={name}\n\
         Image={image}\n",
        name = container.name,
        image = container.image
    );
    if !container.command.is_empty() {
        let words: Vec<String> = container
            .command
            .iter()
            .map(|word| quote_word(word))
            .collect();
        text.push_str(&format!("Exec={}\n", words.join(" ")));
    }
    for (key, value) in &container.environment {
        text.push_str(&format!(
            "Environment={}\n",
            environment_assignment(key, value)
        ));
    }
    for mount in &container.mounts {
        let options = if mount.read_only { ":ro" } else { "" };
        text.push_str(&format!(
            "Volume={}:{}{options}\n",
            mount.source, mount.target
        ));
    }
    for port in &container.ports {
        text.push_str(&format!("PublishPort={port}\n"));
    }
    if let Some(user) = &container.user {
        text.push_str(&format!("User={user}\n"));
    }
    text.push_str("\n[Service]\nRestart=always\n\n[Install]\nWantedBy=multi-user.target\n");
    text
}

/// One command-line word for `ExecStart=`/`Exec=`: always double-quoted, with `\` and
/// `"` escaped, `%` doubled (specifiers) and `$` doubled (variable expansion).
pub fn quote_word(word: &str) -> String {
    let mut quoted = String::with_capacity(word.len() + 2);
    quoted.push('"');
    for character in word.chars() {
        match character {
            '\\' => quoted.push_str("\\\\"),
            '"' => quoted.push_str("\\\""),
            '%' => quoted.push_str("%%"),
            '$' => quoted.push_str("$$"),
            '\t' => quoted.push_str("\\t"),
            other => quoted.push(other),
        }
    }
    quoted.push('"');
    quoted
}

/// A command line: the program written plain when it has only path characters (the
/// usual form), quoted otherwise; every argument quoted.
pub fn command_line(words: &[String]) -> String {
    let mut parts = Vec::with_capacity(words.len());
    for (position, word) in words.iter().enumerate() {
        let plain = word.bytes().all(|byte| {
            byte.is_ascii_alphanumeric()
                || matches!(byte, b'/' | b'.' | b'_' | b'-' | b'+' | b'@' | b',' | b'=')
        });
        if position == 0 && plain && !word.is_empty() {
            parts.push(word.clone());
        } else {
            parts.push(quote_word(word));
        }
    }
    parts.join(" ")
}

/// `"KEY=value"` for `Environment=`, with `\`, `"` escaped and `%` doubled.
pub fn environment_assignment(key: &str, value: &str) -> String {
    let mut quoted = String::from("\"");
    quoted.push_str(key);
    quoted.push('=');
    for character in value.chars() {
        match character {
            '\\' => quoted.push_str("\\\\"),
            '"' => quoted.push_str("\\\""),
            '%' => quoted.push_str("%%"),
            '\t' => quoted.push_str("\\t"),
            other => quoted.push(other),
        }
    }
    quoted.push('"');
    quoted
}

/// `After=` names: a plain name is a mesh service or container (`NAME.service`).
pub fn unit_name(after: &str) -> String {
    if after.contains('.') {
        after.to_string()
    } else {
        format!("{after}.service")
    }
}
