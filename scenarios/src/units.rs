//! Quantities with units, as written in scenario files: sizes (`64KiB`, bytes), rates
//! (`100Gbps`, bits per second) and times (`10us`, picoseconds).
//!
//! The parser is the core's ([`xrdma::units`], where the accepted units are listed), so the
//! `xrdma:` block, read straight into [`xrdma::Config`], and every other section spell a
//! quantity the same way; this module re-exports it.

pub use xrdma::units::{
    parse, parse_rate, parse_size, parse_time, Quantity, Rate, Size, Span, UnitError,
};

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;

    fn ps(n: u64) -> xrdma::Span {
        xrdma::Span::from_ps(n)
    }

    fn from_yaml<T: for<'de> Deserialize<'de>>(text: &str) -> Result<T, String> {
        serde_yaml_ng::from_str(text).map_err(|e| e.to_string())
    }

    #[test]
    fn yaml_numbers_and_strings() {
        assert_eq!(from_yaml::<Size>("65536"), Ok(Size(65_536)));
        assert_eq!(from_yaml::<Size>("64KiB"), Ok(Size(65_536)));
        assert_eq!(from_yaml::<Size>("\"1.5 MiB\""), Ok(Size(1_572_864)));
        // A YAML float that is a whole number of bytes is accepted: 1e6 = 1000000.
        assert_eq!(from_yaml::<Size>("1.0e+6"), Ok(Size(1_000_000)));
        assert_eq!(from_yaml::<Rate>("100Gbps"), Ok(Rate(100_000_000_000)));
        assert_eq!(from_yaml::<Span>("1us"), Ok(Span(ps(1_000_000))));

        let e = from_yaml::<Size>("-5").unwrap_err();
        assert!(e.contains("`-5` is negative"), "{e}");
        let e = from_yaml::<Size>("2.5").unwrap_err();
        assert!(e.contains("`2.5` is not a whole number of bytes"), "{e}");
        let e = from_yaml::<Rate>("100").unwrap_err();
        assert!(e.contains("`100` has no unit"), "{e}");
        let e = from_yaml::<Span>("1.5").unwrap_err();
        assert!(e.contains("`1.5` has no unit"), "{e}");
        let e = from_yaml::<Span>("true").unwrap_err();
        assert!(
            e.contains("invalid type: boolean `true`, expected a time such as `10us`"),
            "{e}"
        );
    }
}
