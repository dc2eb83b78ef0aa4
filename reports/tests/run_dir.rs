//! A results directory ([`RunDir`]): one writer at a time, the earlier run replaced as a
//! whole, a failed write changing nothing, a commit cut short finished by the next writer,
//! and only a run's own files removed.

use std::collections::BTreeMap;
use std::path::Path;

use xrdma_reports::run_dir::Holds;
use xrdma_reports::*;

mod common;
use common::*;

/// Every file in `dir` (not the `.xrdma` state) by name, with its bytes.
fn files(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    std::fs::read_dir(dir)
        .unwrap()
        .filter_map(|e| {
            let e = e.unwrap();
            let name = e.file_name().into_string().unwrap();
            e.file_type()
                .unwrap()
                .is_file()
                .then(|| (name, std::fs::read(e.path()).unwrap()))
        })
        .collect()
}

#[test]
fn a_second_writer_is_refused_naming_the_holder() {
    let d = tmp_dir("rundir-lock");
    let held = RunDir::open(&d, Holds::Run).unwrap();
    let e = RunDir::open(&d, Holds::Run).unwrap_err();
    assert!(
        matches!(e, ReportError::InUse { pid: Some(p), .. } if p == std::process::id()),
        "{e:?}"
    );
    assert_eq!(
        e.to_string(),
        format!(
            "{} is in use by xrdma pid {}",
            d.display(),
            std::process::id()
        )
    );
    let e = write_run_dir(&d, &result(None), false).unwrap_err();
    assert!(matches!(e, ReportError::InUse { .. }), "{e:?}");
    drop(held);
    write_run_dir(&d, &result(None), false).unwrap();
}

#[test]
fn a_run_replaces_the_earlier_one_whole_and_leaves_other_files() {
    let d = tmp_dir("rundir-replace");
    std::fs::write(d.join("notes.txt"), "mine").unwrap();
    std::fs::write(d.join("stages.png"), "mine too").unwrap();
    // Neither run traces, so neither writes a stage plot; the earlier run has a time series
    // and a CSV, this one neither.
    let untraced = |ts| {
        let mut r = result(ts);
        r.messages.iter_mut().for_each(|m| m.stages = None);
        r
    };
    write_run_dir(&d, &untraced(Some(series(4, 10))), true).unwrap();
    assert!(d.join("queue.svg").exists() && d.join("messages.csv").exists());
    let r = untraced(None);
    write_run_dir(&d, &r, false).unwrap();
    let fresh = tmp_dir("rundir-replace-fresh");
    write_run_dir(&fresh, &r, false).unwrap();
    let mut want = files(&fresh);
    want.insert("notes.txt".into(), b"mine".to_vec());
    want.insert("stages.png".into(), b"mine too".to_vec());
    let got = files(&d);
    assert_eq!(
        got.keys().collect::<Vec<_>>(),
        want.keys().collect::<Vec<_>>()
    );
    assert!(got == want, "the same bytes");
}

#[test]
fn a_failed_write_leaves_the_earlier_run_whole_and_says_so() {
    let d = tmp_dir("rundir-failed");
    write_run_dir(&d, &result(Some(series(4, 10))), true).unwrap();
    let before = files(&d);
    // A time series that cannot be drawn fails after result.json and the first plots.
    let mut ts = series(2, 3);
    ts.cnps.pop();
    let e = write_run_dir(&d, &result(Some(ts)), false).unwrap_err();
    assert_eq!(
        e.to_string(),
        format!("{} still holds the earlier run", d.display())
    );
    assert!(files(&d) == before, "every file is the earlier run's");
    assert!(!d.join(run_dir::STATE_DIR).join("staging").exists());
}

#[test]
fn a_commit_cut_short_is_finished_by_the_next_writer() {
    let d = tmp_dir("rundir-journal");
    write_run_dir(&d, &result(Some(series(4, 10))), true).unwrap();
    // A directory in the way of one rename stops the commit halfway, as a crash would.
    std::fs::remove_file(d.join("summary.txt")).unwrap();
    std::fs::create_dir_all(d.join("summary.txt").join("in-the-way")).unwrap();
    let r = result(None);
    let e = write_run_dir(&d, &r, false).unwrap_err();
    assert!(matches!(e, ReportError::Commit { .. }), "{e:?}");
    assert!(e.to_string().contains("replaced only in part"), "{e}");
    std::fs::remove_dir_all(d.join("summary.txt")).unwrap();
    // The next writer finishes the commit before anything else.
    drop(RunDir::open(&d, Holds::Run).unwrap());
    let fresh = tmp_dir("rundir-journal-fresh");
    write_run_dir(&fresh, &r, false).unwrap();
    assert!(files(&d) == files(&fresh), "the new run whole");
}

#[test]
fn a_directory_without_a_list_counts_what_its_result_implies_as_its_own() {
    let d = tmp_dir("rundir-legacy");
    write_run_dir(&d, &result(Some(series(4, 10))), false).unwrap();
    // As written before runs listed their files.
    std::fs::remove_dir_all(d.join(run_dir::STATE_DIR)).unwrap();
    std::fs::write(
        d.join("messages.csv"),
        "a user's, as far as anyone can tell",
    )
    .unwrap();
    write_run_dir(&d, &result(None), false).unwrap();
    assert!(!d.join("queue.svg").exists(), "the earlier run's plot goes");
    assert!(
        d.join("messages.csv").exists(),
        "a file no result lists stays"
    );
}
