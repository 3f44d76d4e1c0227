//! `visual/census.png`: a program's census as one picture, a bar per kernel (the 10
//! costliest) with its share of serialised GPU time, the kernels profiled in colour.

use anyhow::Result;
use plotters::style::text_anchor::HPos;

use super::{fill, fit, render, text, FRAME, HOT, MUTED, TEXT};
use crate::model::census::Breakdown;
use crate::units::{duration, pct_fixed};

/// How many kernels the picture shows; `breakdown.md` lists them all.
pub const CENSUS_BARS: usize = 10;
/// Width of the census picture, pixels.
pub const CENSUS_WIDTH: u32 = 1200;
const TOP: u32 = 96;
const ROW: u32 = 40;
const NAME_W: u32 = 440;
const BAR_X: i32 = 470;
const BAR_W: i32 = 500;

/// Height of the picture of `b`, pixels: the header, a row per kernel shown, a footer.
pub fn census_height(b: &Breakdown) -> u32 {
    TOP + ROW * b.kernels.len().min(CENSUS_BARS) as u32 + 56
}

/// PNG bytes of the census `b`.
pub fn census_png(b: &Breakdown) -> Result<Vec<u8>> {
    render(CENSUS_WIDTH, census_height(b), |root| {
        let title = format!(
            "Census: {} launch{} of {} kernel{}, {} of serialised GPU time",
            b.launches,
            if b.launches == 1 { "" } else { "es" },
            b.kernels.len(),
            if b.kernels.len() == 1 { "" } else { "s" },
            duration(b.total_ns)
        );
        text(root, &fit(root, &title, 26, CENSUS_WIDTH - 40)?, (20, 30), 26, TEXT, HPos::Left)?;
        let under = match &b.bounds {
            Some(bounds) => format!("{bounds}; coloured: profiled ({})", b.pick),
            None => format!("coloured: profiled ({})", b.pick),
        };
        text(root, &fit(root, &under, 16, CENSUS_WIDTH - 40)?, (20, 66), 16, MUTED, HPos::Left)?;
        let widest = b.kernels.first().map_or(0.0, |r| r.share_pct).max(f64::MIN_POSITIVE);
        for (i, r) in b.kernels.iter().take(CENSUS_BARS).enumerate() {
            let y = (TOP + ROW * i as u32) as i32;
            let picked = b.chosen.contains(&r.function);
            let colour = if picked { HOT } else { FRAME };
            text(root, &fit(root, &r.function, 18, NAME_W)?, (20, y + ROW as i32 / 2), 18, TEXT, HPos::Left)?;
            let w = ((r.share_pct / widest) * f64::from(BAR_W)).round().max(1.0) as i32;
            fill(root, (BAR_X, y + 8), (BAR_X + w, y + ROW as i32 - 8), colour)?;
            let label = format!("{}  {}", pct_fixed(r.share_pct, 1), duration(r.total_ns));
            text(root, &label, (BAR_X + w + 10, y + ROW as i32 / 2), 16, TEXT, HPos::Left)?;
        }
        let footer = if b.kernels.len() > CENSUS_BARS {
            format!("... and {} more kernels (breakdown.md lists them all)", b.kernels.len() - CENSUS_BARS)
        } else {
            format!("{} of GPU time profiled", pct_fixed(b.share_of(&b.chosen), 1))
        };
        let y = (TOP + ROW * b.kernels.len().min(CENSUS_BARS) as u32 + 24) as i32;
        text(root, &footer, (20, y), 16, MUTED, HPos::Left)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::census::{CensusLaunch, Pick};

    #[test]
    fn the_picture_has_a_row_per_kernel_and_decodes() {
        let names: Vec<String> = (0..12).map(|i| format!("kernel_{i}")).collect();
        let mut b = Breakdown::from_launches(
            names.iter().enumerate().map(|(i, n)| CensusLaunch {
                kernel: n,
                function: n.clone(),
                duration_ns: 1000.0 * (12 - i) as f64,
                grid: None,
                block: None,
            }),
            false,
        );
        b.pick(Pick::Default).unwrap();
        let png = census_png(&b).unwrap();
        let decoder = png::Decoder::new(std::io::Cursor::new(png));
        let reader = decoder.read_info().unwrap();
        let info = reader.info();
        assert_eq!((info.width, info.height), (CENSUS_WIDTH, TOP + ROW * 10 + 56));
    }
}
