//! The `container` shape: a digest-pinned image run by Podman as a service. Fields and
//! value rules only; the applier writes the Quadlet file.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::check;

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Container {
    pub name: String,
    /// `REGISTRY/PATH@sha256:HEX`; a tag is refused.
    pub image: String,
    /// The command and arguments; empty runs the image's own.
    pub command: Vec<String>,
    pub environment: BTreeMap<String, String>,
    pub mounts: Vec<Mount>,
    /// Published ports: `[[IP:]HOST:]CONTAINER[/tcp|/udp]`.
    pub ports: Vec<String>,
    /// The user inside the container (`name`, `uid` or `uid:gid`); `null` for the image's.
    pub user: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Mount {
    /// A path on the node.
    pub source: String,
    /// A path inside the container.
    pub target: String,
    pub read_only: bool,
}

impl Container {
    pub const FIELDS: &'static [&'static str] = &[
        "name",
        "image",
        "command",
        "environment",
        "mounts",
        "ports",
        "user",
    ];

    pub fn identity(&self) -> &str {
        &self.name
    }

    pub fn validate(&self) -> Result<(), (&'static str, String)> {
        check::name(&self.name).map_err(|reason| ("name", reason))?;
        pinned_image(&self.image).map_err(|reason| ("image", reason))?;
        for argument in &self.command {
            check::unit_text(argument).map_err(|reason| ("command", reason))?;
        }
        check::environment(&self.environment).map_err(|reason| ("environment", reason))?;
        for mount in &self.mounts {
            for path in [&mount.source, &mount.target] {
                check::node_path(path).map_err(|reason| ("mounts", reason))?;
                if path.bytes().any(|byte| {
                    matches!(
                        byte,
                        b':' | b',' | b' ' | b'"' | b'\'' | b'\\' | b'%' | b'$'
                    )
                }) {
                    return Err((
                        "mounts",
                        format!("`{path}` contains a character a volume cannot carry"),
                    ));
                }
            }
        }
        for port in &self.ports {
            published_port(port).map_err(|reason| ("ports", reason))?;
        }
        if let Some(user) = &self.user {
            let user_ok = !user.is_empty()
                && user.split(':').count() <= 2
                && user.split(':').all(|part| {
                    !part.is_empty()
                        && part.bytes().all(|byte| {
                            byte.is_ascii_alphanumeric() || matches!(byte, b'_' | b'-' | b'.')
                        })
                });
            if !user_ok {
                return Err((
                    "user",
                    format!("`{user}` is not `name`, `uid` or `uid:gid`"),
                ));
            }
        }
        Ok(())
    }
}

/// `REGISTRY/PATH@sha256:HEX` with 64 lowercase hex digits and no tag.
pub fn pinned_image(image: &str) -> Result<(), String> {
    let refuse = || format!("`{image}` is not pinned as `REGISTRY/PATH@sha256:HEX`");
    let (name, digest) = image.split_once('@').ok_or_else(refuse)?;
    if !crate::canonical::is_sha256_digest(digest) {
        return Err(refuse());
    }
    let (registry, path) = name.split_once('/').ok_or_else(refuse)?;
    let registry_ok = !registry.is_empty()
        && registry
            .bytes()
            .all(|byte| byte.is_ascii_alphanumeric() || matches!(byte, b'.' | b'-' | b':' | b'_'));
    let path_ok = !path.is_empty()
        && path.split('/').all(|component| {
            !component.is_empty()
                && component.bytes().all(|byte| {
                    byte.is_ascii_lowercase()
                        || byte.is_ascii_digit()
                        || matches!(byte, b'.' | b'_' | b'-')
                })
        });
    if !registry_ok || !path_ok {
        return Err(refuse());
    }
    // a tag would sit after the last path component's `:`; the path charset above has none
    Ok(())
}

/// `[[IP:]HOST:]CONTAINER[/PROTOCOL]` with ports 1-65535 and protocol `tcp`, `udp` or `sctp`.
pub fn published_port(text: &str) -> Result<(), String> {
    let refuse = || format!("`{text}` is not a port such as \"8080:80/tcp\"");
    let (ports, protocol) = match text.split_once('/') {
        Some((ports, protocol)) => (ports, Some(protocol)),
        None => (text, None),
    };
    if let Some(protocol) = protocol
        && !matches!(protocol, "tcp" | "udp" | "sctp")
    {
        return Err(refuse());
    }
    let parts: Vec<&str> = ports.split(':').collect();
    let is_port = |part: &str| matches!(part.parse::<u32>(), Ok(number) if (1..=65535).contains(&number) && !part.starts_with('0'));
    let is_address = |part: &str| part.parse::<std::net::Ipv4Addr>().is_ok();
    let valid = match parts.as_slice() {
        [container] => is_port(container),
        [host, container] => is_port(host) && is_port(container),
        [address, host, container] => {
            is_address(address) && (host.is_empty() || is_port(host)) && is_port(container)
        }
        _ => false,
    };
    if valid { Ok(()) } else { Err(refuse()) }
}
