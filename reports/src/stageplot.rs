//! The stage figure of a traced run (`stages.svg/.png`): the message at each completion
//! percentile (p50, p90, p99, p99.9, max), its bar split into its stages, so each bar's
//! height is that percentile's completion time and its largest segment the stage that makes
//! it ([`crate::stages::summarize`]).

use plotters::coord::Shift;
use plotters::prelude::*;

use crate::chart::{
    draw_legend, nice_upper, plot_err, styled_mesh, tick_decimals, Figure, TimeUnit, CAPTION_PX,
    FONT_FAMILY, TAB10, TITLE_PX,
};
use crate::error::ReportError;
use crate::plot::{run_title, PANEL_SIZE_PX};
use crate::schema::{MessageStages, RunResult};
use crate::stages::StageSummary;

/// The stacked-bar figure of `1`'s breakdowns, titled for run `0`.
pub struct StagePlot<'a>(pub &'a RunResult, pub &'a StageSummary);

impl Figure for StagePlot<'_> {
    fn size(&self) -> (u32, u32) {
        PANEL_SIZE_PX
    }

    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> Result<(), ReportError> {
        let (r, s) = (self.0, self.1);
        let body = root
            .titled(&run_title(r), (FONT_FAMILY, TITLE_PX))
            .map_err(plot_err)?;
        let top = s.at.iter().map(|a| a.completion_ps).max().unwrap_or(0);
        let u = TimeUnit::for_span(top);
        // Headroom for the legend above the bars.
        let y_max = nice_upper(u.of(top).max(1e-9)) * 1.3;
        let n = s.at.len();
        let caption = format!(
            "Where the time went: the message at each completion percentile, by stage ({} \
             traced messages)",
            s.messages
        );
        let mut chart = ChartBuilder::on(&body)
            .caption(caption, (FONT_FAMILY, CAPTION_PX))
            .margin(14)
            .x_label_area_size(48)
            .y_label_area_size(70)
            .build_cartesian_2d(-0.5f64..(n as f64 - 0.5), 0f64..y_max)
            .map_err(plot_err)?;
        let labels: Vec<String> =
            s.at.iter()
                .map(|a| format!("{} ({})", a.label, a.dominant))
                .collect();
        let x_fmt = move |v: &f64| {
            let i = v.round();
            if (v - i).abs() < 1e-6 && i >= 0.0 {
                labels.get(i as usize).cloned().unwrap_or_default()
            } else {
                String::new()
            }
        };
        let d = tick_decimals(y_max);
        let y_fmt = move |v: &f64| format!("{v:.d$}");
        styled_mesh(&mut chart)
            .x_labels(n)
            .x_desc("completion percentile (its dominant stage)")
            .x_label_formatter(&x_fmt)
            .y_desc(format!("completion time ({})", u.symbol))
            .y_label_formatter(&y_fmt)
            .draw()
            .map_err(plot_err)?;
        for (k, name) in MessageStages::NAMES.iter().enumerate() {
            let color = TAB10[k];
            let bars = s.at.iter().enumerate().map(|(i, a)| {
                let v = a.stages.values();
                let below: u64 = v[..k].iter().sum();
                let x = i as f64;
                Rectangle::new(
                    [(x - 0.3, u.of(below)), (x + 0.3, u.of(below + v[k]))],
                    color.filled(),
                )
            });
            chart
                .draw_series(bars)
                .map_err(plot_err)?
                .label(*name)
                .legend(move |(x, y)| {
                    Rectangle::new([(x, y - 5), (x + 14, y + 5)], color.filled())
                });
        }
        draw_legend(&mut chart, SeriesLabelPosition::UpperLeft)
    }
}
