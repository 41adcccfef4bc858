//! `meshc publish`'s half in the transport: declare the topology for the fleet's
//! nodes, publish each node's plan to the `mesh` exchange with the key `plan.NODE`
//! (persistent, mandatory, the plan digest as message id), and wait for every
//! publisher confirm. Reading the build output is the caller's business.

use crate::client::Client;
use crate::connection::Error;
use crate::message::Outgoing;

/// One node's plan, as `meshc build` wrote it.
#[derive(Clone, Debug)]
pub struct PlanMessage {
    pub node: String,
    pub digest: String,
    /// The plan file's bytes, sent as they are.
    pub bytes: Vec<u8>,
}

/// What became of one node's plan.
#[derive(Clone, Debug)]
pub struct Published {
    pub node: String,
    pub digest: String,
    /// `Ok` once the broker confirmed it is in the node's queue.
    pub result: Result<(), Error>,
}

/// Publishes every plan and waits for the confirms. `Err` when the broker cannot be
/// reached or the topology cannot be declared; per-node failures are in the results.
pub fn publish_plans(url: &str, plans: &[PlanMessage]) -> Result<Vec<Published>, Error> {
    let mut client = Client::connect(url, "meshc publish")?;
    let nodes: Vec<&str> = plans.iter().map(|plan| plan.node.as_str()).collect();
    client.declare_topology(&nodes)?;
    let messages: Vec<Outgoing> = plans
        .iter()
        .map(|plan| Outgoing::plan(&plan.node, &plan.digest, plan.bytes.clone()))
        .collect();
    let results = client.publish_all(&messages)?;
    client.close();
    Ok(plans
        .iter()
        .zip(results)
        .map(|(plan, result)| Published {
            node: plan.node.clone(),
            digest: plan.digest.clone(),
            result,
        })
        .collect())
}
