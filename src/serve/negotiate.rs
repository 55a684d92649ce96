//! Which exposition format a scrape gets: OpenMetrics when the request's `Accept` asks for it at
//! least as strongly as for plain text, else the classic text format 0.0.4 (what `curl`, a
//! browser, `promtool check metrics` and older scrapers read). Prometheus itself asks for
//! OpenMetrics first.

use axum::http::header::ACCEPT;
use axum::http::HeaderMap;

/// The two expositions `/metrics` serves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Exposition {
    /// Text format 0.0.4.
    Classic,
    /// OpenMetrics 1.0.0 text.
    OpenMetrics,
}

/// The OpenMetrics media type (without parameters).
const OPENMETRICS_TYPE: &str = "application/openmetrics-text";

impl Exposition {
    /// The `Content-Type` of this exposition.
    pub(crate) fn content_type(self) -> &'static str {
        match self {
            Exposition::Classic => "text/plain; version=0.0.4; charset=utf-8",
            Exposition::OpenMetrics => "application/openmetrics-text; version=1.0.0; charset=utf-8",
        }
    }

    /// The exposition `headers`' `Accept` values ask for (RFC 9110 section 12.5.1: media
    /// ranges with `q` weights; a range that does not parse is ignored).
    pub(crate) fn negotiate(headers: &HeaderMap) -> Exposition {
        let (mut openmetrics, mut text) = (0.0f32, 0.0f32);
        let ranges = headers
            .get_all(ACCEPT)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .flat_map(|v| v.split(','))
            .filter_map(|r| r.trim().parse::<mime::Mime>().ok());
        for range in ranges {
            let q = weight(&range);
            if range.essence_str() == OPENMETRICS_TYPE {
                openmetrics = openmetrics.max(q);
            } else if range.type_() == mime::TEXT || range.type_() == mime::STAR {
                text = text.max(q);
            }
        }
        if openmetrics > 0.0 && openmetrics >= text {
            Exposition::OpenMetrics
        } else {
            Exposition::Classic
        }
    }
}

/// A media range's `q` (1 when absent, 0 when malformed).
fn weight(range: &mime::Mime) -> f32 {
    range.get_param("q").map_or(1.0, |q| {
        q.as_str()
            .parse::<f32>()
            .ok()
            .filter(|q| (0.0..=1.0).contains(q))
            .unwrap_or(0.0)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    fn of(accept: &[&str]) -> Exposition {
        let mut h = HeaderMap::new();
        for a in accept {
            h.append(ACCEPT, HeaderValue::from_str(a).unwrap());
        }
        Exposition::negotiate(&h)
    }

    #[test]
    fn prometheus_gets_openmetrics_and_everyone_else_the_classic_text() {
        // Prometheus 2.x/3.x's default scrape Accept.
        let prometheus = "application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1";
        assert_eq!(of(&[prometheus]), Exposition::OpenMetrics);
        assert_eq!(
            of(&["application/openmetrics-text"]),
            Exposition::OpenMetrics
        );
        assert_eq!(
            of(&["text/plain", "application/openmetrics-text"]),
            Exposition::OpenMetrics
        );
        // Prometheus configured for the classic format first.
        let classic_first =
            "text/plain;version=0.0.4;q=1,application/openmetrics-text;version=1.0.0;q=0.5";
        assert_eq!(of(&[classic_first]), Exposition::Classic);
        for accept in [&[][..], &["*/*"], &["text/plain"], &["text/html,*/*;q=0.8"]] {
            assert_eq!(of(accept), Exposition::Classic, "{accept:?}");
        }
        assert_eq!(
            of(&["application/openmetrics-text;q=0"]),
            Exposition::Classic
        );
        assert_eq!(
            of(&["application/openmetrics-text;q=nonsense"]),
            Exposition::Classic
        );
        assert_eq!(of(&["garbage;;;, /"]), Exposition::Classic);
    }
}
