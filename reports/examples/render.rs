//! Redraws the reports of a saved run: `render <result.json> <out-dir>` reads the result,
//! writes `result.json`, `summary.txt`, `latency.svg` and `messages.csv` into `out-dir`, and
//! prints the summary and any consistency problems.

use std::path::Path;
use std::process::ExitCode;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().collect();
    let [_, input, out] = args.as_slice() else {
        eprintln!("usage: render <result.json> <out-dir>");
        return ExitCode::from(2);
    };
    let result = match xrdma_reports::read_json(Path::new(input)) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::FAILURE;
        }
    };
    for problem in result.validate() {
        eprintln!("inconsistent result: {problem}");
    }
    match xrdma_reports::write_run_dir(Path::new(out), &result, true) {
        Ok(files) => {
            print!("{}", xrdma_reports::summary_table(&result));
            println!("wrote {}", files.dir.display());
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}
