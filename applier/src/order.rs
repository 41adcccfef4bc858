//! The order of plans on a node. Plans carry none (a plan is a pure function of the
//! repository: no clock reaches it), so a node orders them by time: the applied
//! record keeps a mark, the newest time of the plans this node applied, and a plan
//! received from the node's queue that was published before it is refused (E546)
//! instead of rolling the node back. Pure rules over times and the record; the run
//! checks and writes them under the node's lock. Must not read the clock itself: the
//! run passes the node's time in.

use plan::Plan;
use transport::message::utc_timestamp_ms;

use crate::codes::Code;
use crate::problem::Problem;
use crate::record::Record;

/// The mark a run writes into the record from its first write on, given the record's
/// mark (`old`), the stamp of the received plan (`published_ms`, `None` for a local
/// apply or an unstamped message) and the node's time (`now_ms`): a local apply
/// counts as of now, a received plan as of when it was published, but never later
/// than now (a publisher whose clock is ahead must not lock the node out of the plans
/// published after it); the mark never goes back.
pub fn next_mark(old: Option<u64>, published_ms: Option<u64>, now_ms: u64) -> u64 {
    let this_plan = published_ms.map_or(now_ms, |published| published.min(now_ms));
    old.map_or(this_plan, |old| old.max(this_plan))
}

/// Refuses a received plan published before the newest plan this node applied
/// (`record`'s mark), which applying would roll back. A local apply, a message
/// without a stamp, a record without a mark, and the plan the record is about (the
/// one last applied, or the one an apply of it was cut short in) are never refused.
pub fn check(
    record: Option<&Record>,
    plan: &Plan,
    published_ms: Option<u64>,
) -> Result<(), Problem> {
    let (Some(published), Some(record)) = (published_ms, record) else {
        return Ok(());
    };
    let Some(mark) = record.newest_ms else {
        return Ok(());
    };
    if published >= mark || record.plan == plan.digest() {
        return Ok(());
    }
    Err(Problem::new(
        Code::PublishedBeforeLastApply,
        format!(
            "the plan `{}` was published at {}, before the plan this node applied last (`{}`, of {}): applying it would roll the node back",
            plan.digest(),
            utc_timestamp_ms(published),
            record.plan,
            utc_timestamp_ms(mark),
        ),
        "nothing was changed: to apply this plan all the same, publish it again (`meshc publish`), or apply it on the node (`mesh-apply /var/lib/mesh/received.json`, where the listener keeps the plan it received); if it really was published after the plan applied last, the clocks of the publisher and of this node disagree: check that both keep time with NTP (`timedatectl`)",
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::RecordState;

    const NOW: u64 = 1_767_225_600_000;

    #[test]
    fn a_local_apply_marks_now_and_the_mark_never_goes_back() {
        assert_eq!(next_mark(None, None, NOW), NOW);
        assert_eq!(next_mark(Some(NOW - 5), None, NOW), NOW);
        // a clock set back since: the mark stays
        assert_eq!(next_mark(Some(NOW + 5), None, NOW), NOW + 5);
    }

    #[test]
    fn a_received_plan_marks_when_it_was_published_but_never_later_than_now() {
        assert_eq!(next_mark(None, Some(NOW - 60_000), NOW), NOW - 60_000);
        assert_eq!(
            next_mark(Some(NOW - 90_000), Some(NOW - 60_000), NOW),
            NOW - 60_000
        );
        // an older plan applied all the same (its stamp after a local apply's) keeps the mark
        assert_eq!(
            next_mark(Some(NOW - 1_000), Some(NOW - 60_000), NOW),
            NOW - 1_000
        );
        // a publisher an hour ahead: the mark is the node's now, so the plan the
        // publisher sends a minute later (stamped an hour and a minute ahead) is
        // still newer, and one published by a correct clock a second later is too
        let ahead = NOW + 3_600_000;
        let mark = next_mark(Some(NOW - 90_000), Some(ahead), NOW);
        assert_eq!(mark, NOW);
        let record = record(Some(mark));
        let other = Plan::new("db1", Vec::new());
        assert!(check(Some(&record), &other, Some(ahead + 60_000)).is_ok());
        assert!(check(Some(&record), &other, Some(NOW + 1_000)).is_ok());
    }

    fn record(newest_ms: Option<u64>) -> Record {
        Record {
            node: "db1".to_string(),
            plan: "sha256:applied-last".to_string(),
            state: RecordState::Applied,
            shapes: Vec::new(),
            withdrawn: Vec::new(),
            failed_step: None,
            newest_ms,
        }
    }

    #[test]
    fn a_plan_published_before_the_mark_is_refused_with_both_times() {
        let plan = Plan::new("db1", Vec::new());
        let problem = check(Some(&record(Some(NOW))), &plan, Some(NOW - 1)).unwrap_err();
        assert_eq!(problem.code, Code::PublishedBeforeLastApply);
        assert_eq!(problem.code.as_str(), "E546");
        assert!(
            problem
                .message
                .contains("published at 2025-12-31T23:59:59.999Z")
                && problem
                    .message
                    .contains("(`sha256:applied-last`, of 2026-01-01T00:00:00.000Z)")
                && problem.message.contains(plan.digest()),
            "{}",
            problem.message
        );
        assert!(problem.help.contains("publish it again") && problem.help.contains("NTP"));

        // published at the mark or after it, or no mark, or no stamp, or no record
        assert!(check(Some(&record(Some(NOW))), &plan, Some(NOW)).is_ok());
        assert!(check(Some(&record(None)), &plan, Some(0)).is_ok());
        assert!(check(Some(&record(Some(NOW))), &plan, None).is_ok());
        assert!(check(None, &plan, Some(0)).is_ok());
        // the plan the record is about: not a roll back
        let mut same = record(Some(NOW));
        same.plan = plan.digest().to_string();
        same.state = RecordState::Failed;
        assert!(check(Some(&same), &plan, Some(0)).is_ok());
    }
}
