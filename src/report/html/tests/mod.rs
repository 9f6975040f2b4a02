use super::*;
use crate::report::test_rows::rows;

fn render(rows: &[Exchange], max_rows: usize) -> String {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("r.html");
    let mut h = HtmlReport::create(&path, max_rows).unwrap();
    assert!(dir.path().join("r.html.partial").exists());
    assert!(!path.exists());
    for r in rows {
        h.push(r);
    }
    let summary = json!({"inputs": [{"name": "dir/a.pcap", "bytes": 1}]});
    h.finish(&summary, &RowFilter::default()).unwrap();
    assert!(!dir.path().join("r.html.partial").exists());
    std::fs::read_to_string(&path).unwrap()
}

/// The JSON document inside the page, parsed back.
fn data(page: &str) -> Value {
    let open = "<script type=\"application/json\" id=\"mcp-trace-data\">";
    let start = page.find(open).unwrap() + open.len();
    let len = page[start..].find("</script>").unwrap();
    serde_json::from_str(&page[start..start + len]).unwrap()
}

#[test]
fn rows_and_sessions_follow_the_schemas() {
    let page = render(&rows(), 100);
    let d = data(&page);
    let cols: Vec<&str> = d["columns"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    let want: Vec<&str> = <Exchange as Table>::COLUMNS
        .iter()
        .map(|c| c.name)
        .collect();
    assert_eq!(cols, want);
    assert_eq!(
        d["session_columns"].as_array().unwrap().len(),
        <SessionRow as Table>::COLUMNS.len()
    );
    let out_rows = d["rows"].as_array().unwrap();
    assert_eq!(out_rows.len(), 3);
    assert_eq!(d["rows_kept"], 3);
    assert_eq!(d["rows_omitted"], 0);
    // Strings by index into the shared list; timestamps in microseconds.
    let strings = d["strings"].as_array().unwrap();
    let tool = want.iter().position(|c| *c == "tool_name").unwrap();
    let ts = want.iter().position(|c| *c == "ts_request").unwrap();
    let i = out_rows[0][tool].as_u64().unwrap() as usize;
    assert_eq!(strings[i], "search, \"quoted\"\nline");
    assert_eq!(out_rows[0][ts], rows()[0].ts_request);
    // u64::MAX does not fit a JavaScript number: written as a string.
    let rb = want.iter().position(|c| *c == "request_bytes").unwrap();
    assert_eq!(out_rows[2][rb], "18446744073709551615");
    assert_eq!(d["sessions"].as_array().unwrap().len(), 1);
    assert!(page.contains("<title>mcp-trace report: a.pcap</title>"));
}

#[test]
fn captured_text_cannot_close_the_script() {
    let mut rs = rows();
    rs[0].tool_name = Some("</script><script>alert(1)</script>".into());
    rs[1].error_message = Some("<!-- & </SCRIPT >".into());
    let page = render(&rs, 100);
    // Exactly the two script elements of the page end it.
    assert_eq!(page.matches("</script>").count(), 2);
    assert!(!page.to_ascii_lowercase().contains("</script >"));
    assert!(!page.contains("<!--"));
    let d = data(&page);
    let strings: Vec<&str> = d["strings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s.as_str().unwrap())
        .collect();
    assert!(strings.contains(&"</script><script>alert(1)</script>"));
    assert!(strings.contains(&"<!-- & </SCRIPT >"));
}

#[test]
fn rows_past_the_limit_are_counted_not_kept() {
    let base = rows();
    let many: Vec<Exchange> = (0..25)
        .map(|i| {
            let mut e = base[i % 3].clone();
            e.exchange_id = i as u64 + 1;
            e
        })
        .collect();
    let d = data(&render(&many, 10));
    assert_eq!(d["rows"].as_array().unwrap().len(), 10);
    assert_eq!(d["rows_kept"], 10);
    assert_eq!(d["rows_omitted"], 15);
    assert_eq!(d["max_rows"], 10);
    // The sessions still count every selected row.
    let req = <SessionRow as Table>::COLUMNS
        .iter()
        .position(|c| c.name == "exchanges")
        .unwrap();
    assert_eq!(d["sessions"][0][req], 25);
}

#[test]
fn nothing_is_fetched() {
    let page = render(&rows(), 100);
    for needle in [
        "src=",
        "href=",
        "@import",
        "http://",
        "https://",
        "fetch(",
        "XMLHttpRequest",
    ] {
        assert!(!page.contains(needle), "{needle}");
    }
    // SVG markers refer to the page itself only.
    for (i, _) in page.match_indices("url(") {
        assert!(page[i..].starts_with("url(#"), "{}", &page[i..i + 20]);
    }
    assert!(page.contains("default-src 'none'"));
}

#[test]
fn unwritable_path_fails_at_create() {
    let dir = tempfile::tempdir().unwrap();
    let err = HtmlReport::create(&dir.path().join("missing").join("r.html"), 10)
        .err()
        .unwrap();
    assert!(err.to_string().contains("missing/r.html"), "{err}");
}

#[test]
fn filters_are_described() {
    let f = RowFilter {
        outcomes: vec![crate::mcp::Outcome::HttpError],
        only_failures: true,
        since_us: Some(0),
        ..RowFilter::default()
    };
    assert_eq!(
        describe_filter(&f),
        [
            "--outcome HTTP_ERROR",
            "--since 1970-01-01T00:00:00.000000Z",
            "--only-failures"
        ]
    );
}
