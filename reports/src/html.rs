//! `report.html`: one self-contained page per run (no external files, scripts or fonts):
//! the summary table, every plot as inline SVG, the scenario YAML that produced the run, and
//! the tool version.

use std::fmt::Write as _;

use crate::schema::RunResult;
use crate::summary::summary_table;

/// One plot on the page: a heading, a caption saying how to read it, and the SVG document.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HtmlPlot {
    /// Section heading.
    pub title: String,
    /// One or two sentences on what is drawn.
    pub caption: String,
    /// The SVG document (inlined as is).
    pub svg: String,
}

/// Escapes `&`, `<`, `>`, `"` and `'` for HTML text and attribute values.
pub fn escape(text: &str) -> String {
    let mut o = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => o.push_str("&amp;"),
            '<' => o.push_str("&lt;"),
            '>' => o.push_str("&gt;"),
            '"' => o.push_str("&quot;"),
            '\'' => o.push_str("&#39;"),
            _ => o.push(c),
        }
    }
    o
}

/// The report page of `r` with `plots` in the given order.
///
/// Sections: a header (scenario name, file, backend, seed, tool version, schema version), the
/// summary table of [`summary_table`] (which includes the run's wall-clock time, the only
/// non-deterministic content), where the time went when the run was traced (the table of
/// `xrdma trace`, [`crate::stages::stage_table`]), the plots, a note when the run has no time
/// series (a backend that is not simulated, or sampling off), the endpoints and connections
/// with a connection as the run left them (the table of `xrdma stat`,
/// [`crate::endpoint_table::render`], folded), and the scenario YAML from
/// [`RunResult::scenario_yaml`] (or a note that the result does not hold it).
pub fn report_html(r: &RunResult, plots: &[HtmlPlot]) -> String {
    let mut o = String::new();
    let title = format!("xrdma run report: {}", r.scenario.name);
    // Writing into a String cannot fail.
    let _ = write!(
        o,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <title>{}</title>\n<style>\n{}</style>\n</head>\n<body>\n",
        escape(&title),
        STYLE
    );
    let _ = writeln!(o, "<h1>{}</h1>", escape(&title));
    let _ = writeln!(
        o,
        "<p class=\"meta\">scenario file <code>{}</code> · backend <b>{}</b> · seed {} · \
         produced by xrdma {} · result schema version {}</p>",
        escape(&r.scenario.path),
        escape(r.scenario.backend.name()),
        r.scenario.seed,
        escape(&r.tool_version),
        r.schema_version
    );
    let _ = writeln!(
        o,
        "<h2>Summary</h2>\n<pre class=\"summary\">{}</pre>",
        escape(&summary_table(r))
    );
    if let Some(st) = crate::stages::summarize(r) {
        let _ = writeln!(
            o,
            "<h2>Where the time went</h2>\n<pre class=\"summary\">{}</pre>",
            escape(&crate::stages::stage_table(&st))
        );
    }
    for p in plots {
        let _ = writeln!(
            o,
            "<section class=\"plot\">\n<h2>{}</h2>\n<p>{}</p>\n<div class=\"svg\">\n{}\n</div>\n\
             </section>",
            escape(&p.title),
            escape(&p.caption),
            p.svg
        );
    }
    if r.timeseries.is_none() {
        let _ = writeln!(
            o,
            "<p class=\"note\">No time series in this result (backend <b>{}</b>: only the \
             simulator samples queues, throughput and congestion signals, and only with \
             <code>sim.sample-interval</code> not <code>off</code>).</p>",
            escape(r.scenario.backend.name())
        );
    }
    if let Some(all) = &r.endpoints {
        let with_conns: Vec<_> = all
            .iter()
            .filter(|e| !e.snapshot.connections.is_empty())
            .collect();
        let _ = writeln!(
            o,
            "<h2>Endpoints</h2>\n<details><summary>{} endpoint(s) with a connection, as the run \
             left them (what <code>xrdma stat</code> prints)</summary>\n<pre>{}</pre>\n\
             </details>",
            with_conns.len(),
            escape(&crate::endpoint_table::render(&with_conns))
        );
    }
    o.push_str("<h2>Scenario</h2>\n");
    match &r.scenario_yaml {
        Some(y) => {
            let _ = writeln!(
                o,
                "<p>The scenario file as it was read for this run (<code>--seed</code> and \
                 <code>--stack</code> given on the command line override <code>sim.seed</code> \
                 and <code>stack</code>; this run used seed {} and stack <b>{}</b>).</p>\n\
                 <pre class=\"yaml\">{}</pre>",
                r.scenario.seed,
                escape(r.scenario.stack.name()),
                escape(y)
            );
        }
        None => o.push_str(
            "<p class=\"note\">This result does not hold the scenario text (written by a \
             version that did not save it).</p>\n",
        ),
    }
    let _ = writeln!(
        o,
        "<footer>xrdma {} · every plot is redrawn from result.json by <code>xrdma report</code>\
         </footer>\n</body>\n</html>",
        escape(&r.tool_version)
    );
    o
}

const STYLE: &str = "body { font-family: sans-serif; margin: 2em auto; max-width: 1100px; \
color: #222; }\n\
h1 { font-size: 1.6em; }\n\
h2 { font-size: 1.25em; margin-top: 1.6em; border-bottom: 1px solid #ccc; }\n\
pre { background: #f6f6f6; padding: 0.8em; overflow-x: auto; font-size: 0.9em; }\n\
.meta, footer { color: #555; }\n\
.note { background: #fff6d6; padding: 0.5em; }\n\
.svg svg { max-width: 100%; height: auto; }\n\
footer { margin-top: 2em; font-size: 0.9em; }\n";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_markup() {
        assert_eq!(escape("a<b & \"c\">"), "a&lt;b &amp; &quot;c&quot;&gt;");
        assert_eq!(escape("it's"), "it&#39;s");
    }
}
