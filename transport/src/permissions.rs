//! Least privilege on the broker: one RabbitMQ user per node, one for the builder and
//! one for the operator, with the vhost permissions and the topic permissions on the
//! `mesh` exchange that let each do its job and nothing else; written out as a shell
//! script of `rabbitmqctl` commands (`meshc broker-permissions`). Must not talk to the
//! broker itself.
//!
//! | user | configure | write | read | topic write on `mesh` |
//! | --- | --- | --- | --- | --- |
//! | `mesh-node-NODE` | nothing | `mesh` | `mesh.node.NODE` | `status.NODE` |
//! | `mesh-builder` | nothing | `mesh` | `mesh.builds` | `build.result` |
//! | `mesh-operator` | the exchange and queues | the same, private queues | `mesh`, private queues | `plan.*`, `build.request` |
//!
//! A node cannot configure anything (it checks its queue exists with a passive
//! declare, which needs no permission), so it cannot bind its queue to another
//! node's key; it can read one queue; it can write only to the `mesh` exchange, never
//! to the default one (so never straight into a queue), and there only with its own
//! status key. The builder likewise. Without the topic permissions, write access to
//! the exchange would let anyone publish into any node's queue: that is why results
//! go through the exchange with their own key (see the book, "Transport").

use crate::names::{self, exact_pattern};

/// The builder's user.
pub const BUILDER_USER: &str = "mesh-builder";

/// The operator's user (`meshc publish`, `meshc artifacts build --remote`).
pub const OPERATOR_USER: &str = "mesh-operator";

/// The user of `node`.
pub fn node_user(node: &str) -> String {
    format!("mesh-node-{node}")
}

/// One user's permissions in the vhost, as RabbitMQ regular expressions.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Permission {
    pub user: String,
    /// What the user is for (a comment in the script).
    pub purpose: String,
    pub configure: String,
    pub write: String,
    pub read: String,
    /// Routing keys the user may publish with to the `mesh` exchange.
    pub topic_write: String,
    /// Routing keys the user may bind or consume with on the `mesh` exchange (only
    /// enforced by some protocols; set anyway).
    pub topic_read: String,
}

const NOTHING: &str = "^$";

/// The permissions for the fleet of `nodes`: the operator, the builder, then one
/// user per node in the given order.
pub fn permissions(nodes: &[&str]) -> Vec<Permission> {
    let exchange = exact_pattern(names::EXCHANGE);
    let operator_resources = format!(
        "^(mesh|{}|mesh\\.node\\..+|amq\\.gen-.+)$",
        exact_pattern(names::BUILD_QUEUE)
            .trim_start_matches('^')
            .trim_end_matches('$')
    );
    let mut permissions = vec![
        Permission {
            user: OPERATOR_USER.to_string(),
            purpose: "the operator: declares the exchange and the queues, publishes plans and build requests, reads answers on private queues".to_string(),
            configure: operator_resources.clone(),
            write: operator_resources,
            read: "^(mesh|amq\\.gen-.+)$".to_string(),
            topic_write: format!(
                "^(plan\\..+|{})$",
                exact_pattern(names::BUILD_REQUEST_KEY)
                    .trim_start_matches('^')
                    .trim_end_matches('$')
            ),
            topic_read: ".*".to_string(),
        },
        Permission {
            user: BUILDER_USER.to_string(),
            purpose: "the builder: reads the build queue, publishes build results".to_string(),
            configure: NOTHING.to_string(),
            write: exchange.clone(),
            read: exact_pattern(names::BUILD_QUEUE),
            topic_write: exact_pattern(names::BUILD_RESULT_KEY),
            topic_read: exact_pattern(names::BUILD_REQUEST_KEY),
        },
    ];
    for node in nodes {
        permissions.push(Permission {
            user: node_user(node),
            purpose: format!("node `{node}`: reads its own plans, publishes its own status"),
            configure: NOTHING.to_string(),
            write: exchange.clone(),
            read: exact_pattern(&names::node_queue(node)),
            topic_write: exact_pattern(&names::status_key(node)),
            topic_read: exact_pattern(&names::plan_key(node)),
        });
    }
    permissions
}

/// Quotes `text` for a POSIX shell.
fn quote(text: &str) -> String {
    format!("'{}'", text.replace('\'', "'\\''"))
}

/// The script: users (passwords read from `$MESH_BROKER_PASSWORDS/USER`, made by the
/// operator, and given to `rabbitmqctl` on its standard input), their permissions in
/// `vhost`, their topic permissions on `mesh`.
/// Idempotent: a user that exists gets its password and permissions set again.
pub fn script(nodes: &[&str], vhost: &str, source: &str) -> String {
    let mut out = String::new();
    out.push_str("#!/bin/sh\n");
    out.push_str(&format!(
        "# RabbitMQ users and permissions for the mesh fleet of {source}, written by\n\
         # `meshc broker-permissions`. Run it where `rabbitmqctl` reaches the broker, as its\n\
         # administrator. Each user's password is the first line of\n\
         # $MESH_BROKER_PASSWORDS/USER, a file you make (and give that user's machine, in\n\
         # its broker URL). Running it again sets every password and permission again.\n"
    ));
    out.push_str("set -eu\n");
    out.push_str(&format!("vhost={}\n", quote(vhost)));
    out.push_str(
        "passwords=\"${MESH_BROKER_PASSWORDS:?set MESH_BROKER_PASSWORDS to the directory holding one password file per user}\"\n\n",
    );
    // the password goes on rabbitmqctl's standard input (it reads it there when the
    // argument is left out), never on its command line, which every local user can
    // read (`ps`, /proc/PID/cmdline) while it runs
    out.push_str(
        "# each password goes on rabbitmqctl's standard input, never on a command line\n\
         user() {\n  rabbitmqctl -q add_user \"$1\" < \"$passwords/$1\" >/dev/null 2>&1 ||\n    rabbitmqctl -q change_password \"$1\" < \"$passwords/$1\"\n}\n",
    );
    for permission in permissions(nodes) {
        out.push_str(&format!("\n# {}\n", permission.purpose));
        out.push_str(&format!("user {}\n", quote(&permission.user)));
        out.push_str(&format!(
            "rabbitmqctl -q set_permissions -p \"$vhost\" {} {} {} {}\n",
            quote(&permission.user),
            quote(&permission.configure),
            quote(&permission.write),
            quote(&permission.read)
        ));
        out.push_str(&format!(
            "rabbitmqctl -q set_topic_permissions -p \"$vhost\" {} {} {} {}\n",
            quote(&permission.user),
            quote(names::EXCHANGE),
            quote(&permission.topic_write),
            quote(&permission.topic_read)
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_node_reads_its_queue_and_writes_its_status() {
        let all = permissions(&["db1", "a.b"]);
        let users: Vec<&str> = all.iter().map(|p| p.user.as_str()).collect();
        assert_eq!(
            users,
            [
                "mesh-operator",
                "mesh-builder",
                "mesh-node-db1",
                "mesh-node-a.b"
            ]
        );
        let node = &all[3];
        assert_eq!(node.configure, "^$");
        assert_eq!(node.write, "^mesh$");
        assert_eq!(node.read, "^mesh\\.node\\.a\\.b$");
        assert_eq!(node.topic_write, "^status\\.a\\.b$");
        let builder = &all[1];
        assert_eq!(builder.read, "^mesh\\.builds$");
        assert_eq!(builder.topic_write, "^build\\.result$");
        assert_eq!(all[0].topic_write, "^(plan\\..+|build\\.request)$");
        assert_eq!(
            all[0].configure,
            "^(mesh|mesh\\.builds|mesh\\.node\\..+|amq\\.gen-.+)$"
        );
    }

    #[test]
    fn no_password_is_put_on_a_command_line() {
        let text = script(&["db1"], "/", "build/manifest.json");
        for line in text.lines().filter(|line| line.contains("rabbitmqctl ")) {
            // the command and its arguments: what comes before a redirection
            let arguments = line.split(['<', '>']).next().unwrap_or(line);
            assert!(
                !arguments.contains("$password")
                    && !arguments.contains("$(")
                    && !arguments.contains('`'),
                "a password may reach rabbitmqctl's arguments: {line}"
            );
        }
        assert!(text.contains("rabbitmqctl -q add_user \"$1\" < \"$passwords/$1\""));
        assert!(text.contains("rabbitmqctl -q change_password \"$1\" < \"$passwords/$1\""));
    }

    #[test]
    fn the_script_quotes_for_the_shell() {
        let text = script(&["db1"], "it's", "build/manifest.json");
        assert!(text.contains("vhost='it'\\''s'"));
        assert!(text.contains(
            "rabbitmqctl -q set_topic_permissions -p \"$vhost\" 'mesh-node-db1' 'mesh' '^status\\.db1$' '^plan\\.db1$'"
        ));
    }
}
