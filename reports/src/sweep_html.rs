//! A self-contained HTML page for a sweep: the index table, the plots (inline SVG), the axes,
//! the base scenario that produced the points and the tool version. The page loads nothing
//! from elsewhere, so it can be mailed or attached to a review as one file.

use crate::html::escape;
use std::fmt::Write as _;

/// Everything [`sweep_html`] puts on the page. Plain text fields are HTML-escaped; the SVG
/// documents are embedded as given.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SweepPage {
    /// Page title and heading, e.g. `sweep of incast-256`.
    pub title: String,
    /// Version of the tool that wrote the sweep.
    pub tool_version: String,
    /// The command line that produced the sweep, shown verbatim.
    pub command: String,
    /// The swept axes: `(name, values as written)`.
    pub axes: Vec<(String, Vec<String>)>,
    /// Column headers of the index table.
    pub headers: Vec<String>,
    /// Rows of the index table, one per point, as many cells as `headers`.
    pub rows: Vec<Vec<String>>,
    /// Figures: `(caption, SVG document)`.
    pub figures: Vec<(String, String)>,
    /// Lines shown instead of a figure that could not be drawn (e.g. no fan-in axis).
    pub notes: Vec<String>,
    /// Path of the base scenario file.
    pub scenario_path: String,
    /// Text of the base scenario file (YAML).
    pub scenario_yaml: String,
}

/// Drops an XML declaration before the `<svg` element, so the document can sit inline in HTML.
fn inline_svg(svg: &str) -> &str {
    svg.find("<svg").map_or(svg, |i| &svg[i..])
}

const STYLE: &str = "body{font-family:sans-serif;margin:2em;color:#222}\
table{border-collapse:collapse;font-size:13px}\
th,td{border:1px solid #bbb;padding:3px 8px;text-align:right}\
th{background:#eee}td:first-child,th:first-child{text-align:left}\
pre{background:#f6f6f6;padding:1em;overflow:auto;font-size:13px}\
figure{margin:1em 0}svg{max-width:100%;height:auto}";

/// Renders `page` as one HTML5 document (UTF-8, inline CSS and SVG, no scripts, no external
/// resources). Equal inputs give byte-identical output.
pub fn sweep_html(page: &SweepPage) -> String {
    let e = escape;
    let mut o = String::new();
    // Writing into a String cannot fail.
    let _ = write!(
        o,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <title>{}</title>\n<style>{STYLE}</style>\n</head>\n<body>\n<h1>{}</h1>\n\
         <p>xrdma {} &mdash; <code>{}</code></p>\n",
        e(&page.title),
        e(&page.title),
        e(&page.tool_version),
        e(&page.command)
    );
    o.push_str("<h2>Axes</h2>\n<ul>\n");
    for (name, values) in &page.axes {
        let _ = writeln!(o, "<li><b>{}</b>: {}</li>", e(name), e(&values.join(", ")));
    }
    o.push_str("</ul>\n<h2>Points</h2>\n<table>\n<tr>");
    for h in &page.headers {
        let _ = write!(o, "<th>{}</th>", e(h));
    }
    o.push_str("</tr>\n");
    for row in &page.rows {
        o.push_str("<tr>");
        for cell in row {
            let _ = write!(o, "<td>{}</td>", e(cell));
        }
        o.push_str("</tr>\n");
    }
    o.push_str("</table>\n<h2>Plots</h2>\n");
    for note in &page.notes {
        let _ = writeln!(o, "<p>{}</p>", e(note));
    }
    for (caption, svg) in &page.figures {
        let _ = write!(
            o,
            "<figure>\n{}\n<figcaption>{}</figcaption>\n</figure>\n",
            inline_svg(svg),
            e(caption)
        );
    }
    let _ = write!(
        o,
        "<h2>Base scenario</h2>\n<p><code>{}</code></p>\n<pre>{}</pre>\n</body>\n</html>\n",
        e(&page.scenario_path),
        e(&page.scenario_yaml)
    );
    o
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn page_has_every_part_and_no_external_resource() {
        let page = SweepPage {
            title: "sweep of incast".into(),
            tool_version: "0.1.0".into(),
            command: "xrdma sweep x.yaml --axis fan-in=2,4".into(),
            axes: vec![("fan-in".into(), vec!["2".into(), "4".into()])],
            headers: vec!["point".into(), "p99 µs".into()],
            rows: vec![vec!["fan-in-2".into(), "12.5".into()]],
            figures: vec![(
                "fig".into(),
                "<?xml version=\"1.0\"?>\n<svg width=\"1\"></svg>".into(),
            )],
            notes: vec![],
            scenario_path: "x.yaml".into(),
            scenario_yaml: "name: <x>\n".into(),
        };
        let html = sweep_html(&page);
        assert!(html.contains("<td>fan-in-2</td><td>12.5</td>"));
        assert!(html.contains("<li><b>fan-in</b>: 2, 4</li>"));
        assert!(html.contains("<figure>\n<svg width=\"1\"></svg>"));
        assert!(!html.contains("<?xml"));
        assert!(html.contains("name: &lt;x&gt;"));
        assert!(html.contains("xrdma 0.1.0"));
        assert!(!html.contains("src=") && !html.contains("href="));
    }
}
