//! A reader looping over a file while the applier rewrites it 10,000 times never sees
//! partial or empty content: content reaches its path only by rename.

mod support;

use std::io::Read;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use plan::Plan;
use support::*;

#[test]
fn a_concurrent_reader_sees_only_whole_versions() {
    let root = TestRoot::in_memory();
    let keys = Keys::new();
    let plans = tempfile::tempdir().expect("tempdir");
    let versions: Vec<String> = ["a", "b"]
        .iter()
        .map(|letter| letter.repeat(16 * 1024))
        .collect();
    let plan_paths: Vec<_> = versions
        .iter()
        .enumerate()
        .map(|(number, content)| {
            write_plan(
                plans.path(),
                &format!("plan{number}.json"),
                &Plan::new("db1", vec![file("/etc/big.conf", content, "root", "0644")]),
            )
        })
        .collect();
    let config = |plan_path: &std::path::Path| applier::Config {
        plan: applier::PlanSource::File(plan_path.to_path_buf()),
        identity_path: Some(keys.identity.clone()),
        keep_generations: 10,
        root: Some(root.path().to_path_buf()),
        node: None,
        artifacts: root.artifacts.clone(),
        dry_run: false,
        format: applier::OutputFormat::Json,
        published_ms: None,
    };
    let first = applier::run(&config(&plan_paths[0]));
    assert!(first.succeeded());

    let done = Arc::new(AtomicBool::new(false));
    let reads = Arc::new(AtomicUsize::new(0));
    let target = root.host("/etc/big.conf");
    let reader = {
        let done = Arc::clone(&done);
        let reads = Arc::clone(&reads);
        let versions = versions.clone();
        std::thread::spawn(move || {
            let mut content = String::new();
            while !done.load(Ordering::Relaxed) {
                content.clear();
                let mut handle = std::fs::File::open(&target).expect("the file always exists");
                handle.read_to_string(&mut content).expect("read");
                assert!(
                    versions.contains(&content),
                    "saw {} bytes that are neither version",
                    content.len()
                );
                reads.fetch_add(1, Ordering::Relaxed);
            }
        })
    };
    let rewrites = 10_000;
    for number in 0..rewrites {
        let report = applier::run(&config(&plan_paths[(number + 1) % 2]));
        assert!(report.succeeded(), "{}", report.render_human());
        assert_eq!(report.count(applier::Status::Changed), 1);
    }
    done.store(true, Ordering::Relaxed);
    reader.join().expect("the reader saw only whole versions");
    assert!(reads.load(Ordering::Relaxed) > 100, "the reader barely ran");
}
