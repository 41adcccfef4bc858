//! `meshc publish` and `meshc broker-permissions`: read a build output
//! (`OUT/manifest.json` and `OUT/nodes/NODE.json`), check that every plan verifies and
//! is the one the manifest names, and hand them to `transport`. Must not compile
//! anything: what is published is exactly what `meshc build` wrote.

use std::path::Path;

use lang::{Diagnostic, codes};
use plan::Plan;

use crate::say;
use transport::publish::{PlanMessage, Published};

/// E408: the file at `path` of the build in `out` cannot be published as it is.
fn unreadable(path: &Path, reason: impl std::fmt::Display, out: &Path) -> Box<Diagnostic> {
    Box::new(compiler::build_unreadable(path, reason, help(out)))
}

/// What E408 says to do when the build in `out` cannot be published.
pub fn help(out: &Path) -> String {
    format!(
        "point `--out` at the output of a `meshc build` (a directory with manifest.json and nodes/), or build again with `meshc build --out {}`",
        out.display()
    )
}

/// E440: the broker at `url` cannot be reached, or refused what was asked of it, or
/// did not finish connecting in time.
pub fn broker_unavailable(error: &transport::connection::Error) -> Box<Diagnostic> {
    let help = match error.timed_out() {
        Some(limit) => format!(
            "the connection was given up after {}: check that `--amqp URL` (or `{}`) names a RabbitMQ that is up, not a port another program took over; a broker slow to answer may be given longer with `?connection_timeout=MILLISECONDS` in the URL (default {}; `--remote` gives up at its `--timeout` too)",
            transport::connection::seconds(limit),
            transport::names::URL_VARIABLE,
            transport::connection::seconds(transport::connection::DEFAULT_CONNECT_TIMEOUT),
        ),
        None => format!(
            "check `--amqp URL` (or `{}`): the broker must run there and let this user in; `meshc broker-permissions` prints the permissions the operator needs",
            transport::names::URL_VARIABLE
        ),
    };
    Box::new(Diagnostic::error(codes::BROKER_UNAVAILABLE, error.to_string()).with_help(help))
}

/// The build output `out` opened for reading (E408 when it cannot be).
pub fn open(out: &Path) -> Result<compiler::BuildOutput, Box<Diagnostic>> {
    compiler::BuildOutput::open(out, &help(out)).map_err(Box::new)
}

/// The plans of the build `output`, in node-name order; `only` (if not empty) picks
/// nodes by name.
pub fn read_output(
    output: &compiler::BuildOutput,
    only: &[String],
) -> Result<Vec<PlanMessage>, Box<Diagnostic>> {
    let out = output.path();
    let manifest_path = out.join("manifest.json");
    let manifest = output.manifest(&help(out)).map_err(Box::new)?;
    let nodes = &manifest.digests;
    for name in only {
        if !nodes.contains_key(name) {
            return Err(Box::new(
                Diagnostic::error(
                    codes::UNKNOWN_NODE,
                    format!(
                        "node `{}` is not in the build in `{}`",
                        plan::display::escaped(name),
                        out.display()
                    ),
                )
                .with_help(
                    "pass `--node` a node of the build (its `nodes/NODE.json`), or build again after adding the node to the inventory",
                ),
            ));
        }
    }
    let mut plans = Vec::new();
    for (node, digest) in nodes {
        if !only.is_empty() && !only.contains(node) {
            continue;
        }
        transport::names::check_node(node)
            .map_err(|error| unreadable(&manifest_path, error, out))?;
        let path = out.join("nodes").join(format!("{node}.json"));
        let bytes = output.plan_file(node, &help(out)).map_err(Box::new)?;
        let plan = Plan::read(&bytes).map_err(|error| unreadable(&path, error, out))?;
        if plan.node() != node || plan.digest() != digest {
            return Err(unreadable(
                &path,
                format!("it is not the plan the manifest names for `{node}`"),
                out,
            ));
        }
        plans.push(PlanMessage {
            node: node.clone(),
            digest: plan.digest().to_string(),
            bytes,
        });
    }
    Ok(plans)
}

/// Publishes; the table to print (one line per node) and whether every plan was
/// confirmed.
pub fn publish(
    output: &compiler::BuildOutput,
    url: &str,
    only: &[String],
) -> Result<(String, bool), Box<Diagnostic>> {
    let plans = read_output(output, only)?;
    if plans.is_empty() {
        say!("the build in `{}` has no nodes", output.path().display());
        return Ok((String::new(), true));
    }
    let published = transport::publish::publish_plans(url, &plans)
        .map_err(|error| broker_unavailable(&error))?;
    let width = published.iter().map(|p| p.node.len()).max().unwrap_or(0);
    let mut all = true;
    let mut table = String::new();
    for Published {
        node,
        digest,
        result,
    } in &published
    {
        match result {
            Ok(()) => table.push_str(&format!("{node:<width$}  {digest}  published\n")),
            Err(error) => {
                all = false;
                table.push_str(&format!(
                    "{node:<width$}  {digest}  not published: {error}\n"
                ));
            }
        }
    }
    let confirmed = published.iter().filter(|p| p.result.is_ok()).count();
    say!(
        "published {confirmed} of {} plan(s) to {}",
        published.len(),
        transport::names::redact(url)
    );
    Ok((table, all))
}

/// The `rabbitmqctl` script for the nodes of the build `output`.
pub fn broker_permissions(
    output: &compiler::BuildOutput,
    vhost: &str,
) -> Result<String, Box<Diagnostic>> {
    let out = output.path();
    let plans = read_output(output, &[])?;
    let nodes: Vec<&str> = plans.iter().map(|plan| plan.node.as_str()).collect();
    let source = out.join("manifest.json");
    Ok(transport::permissions::script(
        &nodes,
        vhost,
        &source.display().to_string(),
    ))
}
