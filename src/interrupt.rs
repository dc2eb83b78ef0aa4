//! SIGINT and SIGTERM while a command writes a results directory: the run stops, its staged
//! files are discarded (no commit is cut in half: one in progress ends first), the command
//! says what each directory holds ("DIR still holds the earlier run") and exits 128 + the
//! signal's number (130 for SIGINT), as a shell reports a process the signal killed.

use signal_hook::consts::{SIGINT, SIGTERM};
use signal_hook::iterator::Signals;

/// Handles SIGINT and SIGTERM for the rest of the process as the module docs say: a thread
/// registers for them and waits. Until it has (or if it cannot), the signals keep their
/// default action, which kills the process: the results directories stay whole then too,
/// only without a word.
pub fn install() {
    let _ = std::thread::Builder::new()
        .name("signals".into())
        .spawn(|| {
            let Ok(mut signals) = Signals::new([SIGINT, SIGTERM]) else {
                return;
            };
            if let Some(sig) = signals.forever().next() {
                for note in xrdma_reports::run_dir::interrupted() {
                    eprintln!("interrupted: {note}");
                }
                std::process::exit(128 + sig);
            }
        });
}
