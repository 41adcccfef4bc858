//! The asking side of remote builds (`meshc artifacts build --remote`): subscribe to
//! build results on a private queue first, then send one request per directory with a
//! fresh correlation id, and wait for the results that carry those ids, ignoring
//! every other result (every asker sees every result: they come through the exchange,
//! see the book, "Transport"). Times out with an error that names what is missing.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use crate::client::Client;
use crate::connection::Error;
use crate::message::{BuildRequest, BuildResult, new_correlation_id};
use crate::names;

/// One answered request.
#[derive(Clone, Debug)]
pub struct Answer {
    pub directory: String,
    pub correlation_id: String,
    pub result: BuildResult,
}

/// Sends a build request for each directory and waits up to `timeout` for all the
/// answers; returns them in the order of `directories`, and how many results for
/// other requests were seen and ignored.
pub fn build(
    url: &str,
    directories: &[String],
    timeout: Duration,
) -> Result<(Vec<Answer>, usize), Error> {
    let started = Instant::now();
    // connecting is part of the wait: a shorter `--timeout` bounds it too
    let mut client = Client::connect_within(url, "meshc artifacts build --remote", Some(timeout))?;
    client.declare_topology(&[])?;
    let mut subscription = client.subscribe(names::BUILD_RESULT_KEY)?;
    let requests: Vec<(String, String)> = directories
        .iter()
        .map(|directory| (new_correlation_id(), directory.clone()))
        .collect();
    let messages: Vec<_> = requests
        .iter()
        .map(|(id, directory)| BuildRequest::new(directory).to_outgoing(id))
        .collect();
    for ((_, directory), published) in requests.iter().zip(client.publish_all(&messages)?) {
        published.map_err(|error| {
            Error::new(format!(
                "cannot send the build request for `{directory}`: {error}"
            ))
        })?;
    }
    let mut pending: BTreeMap<String, String> = requests.iter().cloned().collect();
    let mut answers: BTreeMap<String, BuildResult> = BTreeMap::new();
    let mut ignored = 0;
    while !pending.is_empty() {
        let left = timeout.saturating_sub(started.elapsed());
        let message = if left.is_zero() {
            None
        } else {
            client.next(&mut subscription, left)?
        };
        let Some(message) = message else {
            let missing: Vec<String> = pending
                .iter()
                .map(|(id, directory)| format!("`{directory}` (request {id})"))
                .collect();
            return Err(Error::new(format!(
                "timed out after {} s waiting for build results: no answer for {}; is a builder (`mesh-build`) running and connected to this broker?",
                timeout.as_secs(),
                missing.join(", ")
            )));
        };
        let Some(id) = message
            .correlation_id
            .as_ref()
            .filter(|id| pending.contains_key(*id))
            .cloned()
        else {
            ignored += 1;
            continue;
        };
        match BuildResult::parse(&message.body) {
            Ok(result) => {
                pending.remove(&id);
                answers.insert(id, result);
            }
            Err(_) => ignored += 1,
        }
    }
    client.close();
    let answers = requests
        .into_iter()
        .filter_map(|(id, directory)| {
            let result = answers.remove(&id)?;
            Some(Answer {
                directory,
                correlation_id: id,
                result,
            })
        })
        .collect();
    Ok((answers, ignored))
}
