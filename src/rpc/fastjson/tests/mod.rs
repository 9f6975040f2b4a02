use super::*;
use serde::de::{IgnoredAny, MapAccess, SeqAccess};
use serde_json::Value;
use std::cell::RefCell;
use std::fmt;
use std::marker::PhantomData;

/// Every visitor call, in order, with the exact kind (borrowed or not, u64/i64/f64 bits).
/// Members under a key `skip` are read as `IgnoredAny`.
#[derive(Clone, Copy)]
struct Rec<'l>(&'l RefCell<Vec<String>>);

impl Rec<'_> {
    fn log(&self, event: String) {
        self.0.borrow_mut().push(event);
    }
}

impl<'de> DeserializeSeed<'de> for Rec<'_> {
    type Value = ();
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> std::result::Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Rec<'_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("anything")
    }
    fn visit_unit<E: de::Error>(self) -> std::result::Result<(), E> {
        self.log("unit".into());
        Ok(())
    }
    fn visit_bool<E: de::Error>(self, v: bool) -> std::result::Result<(), E> {
        self.log(format!("bool {v}"));
        Ok(())
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> std::result::Result<(), E> {
        self.log(format!("u64 {v}"));
        Ok(())
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> std::result::Result<(), E> {
        self.log(format!("i64 {v}"));
        Ok(())
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> std::result::Result<(), E> {
        self.log(format!("f64 {:x}", v.to_bits()));
        Ok(())
    }
    fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> std::result::Result<(), E> {
        self.log(format!("borrowed {v:?}"));
        Ok(())
    }
    fn visit_str<E: de::Error>(self, v: &str) -> std::result::Result<(), E> {
        self.log(format!("str {v:?}"));
        Ok(())
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> std::result::Result<(), A::Error> {
        self.log("seq".into());
        while seq.next_element_seed(self)?.is_some() {}
        self.log("end seq".into());
        Ok(())
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> std::result::Result<(), A::Error> {
        self.log("map".into());
        while let Some(k) = map.next_key_seed(KeyRec(self.0))? {
            if k == "skip" {
                map.next_value::<IgnoredAny>()?;
                self.log("skipped".into());
            } else {
                map.next_value_seed(self)?;
            }
        }
        self.log("end map".into());
        Ok(())
    }
}

struct KeyRec<'l>(&'l RefCell<Vec<String>>);

impl<'de> DeserializeSeed<'de> for KeyRec<'_> {
    type Value = String;
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> std::result::Result<String, D::Error> {
        d.deserialize_str(self)
    }
}

impl<'de> Visitor<'de> for KeyRec<'_> {
    type Value = String;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a key")
    }
    fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> std::result::Result<String, E> {
        self.0.borrow_mut().push(format!("key borrowed {v:?}"));
        Ok(v.to_string())
    }
    fn visit_str<E: de::Error>(self, v: &str) -> std::result::Result<String, E> {
        self.0.borrow_mut().push(format!("key str {v:?}"));
        Ok(v.to_string())
    }
}

fn serde_json_seed<'de, S: DeserializeSeed<'de>>(text: &'de str, seed: S) -> Result<S::Value> {
    let mut de = serde_json::Deserializer::from_str(text);
    let out = seed.deserialize(&mut de)?;
    de.end()?;
    Ok(out)
}

/// Checks the contract on `text` for `Value` and for the recorded visits (members under
/// `skip` ignored); whether the fast path answered the latter.
fn agrees(text: &str) -> bool {
    let theirs = serde_json::from_str::<Value>(text);
    let fast = from_str_seed(text, PhantomData::<Value>);
    if let Ok(v) = &fast {
        let theirs = theirs
            .as_ref()
            .unwrap_or_else(|e| panic!("{text:?}: fast Ok, serde_json {e}"));
        assert_eq!(v, theirs, "{text:?}");
        // Also tells -0.0 from 0.0.
        assert_eq!(v.to_string(), theirs.to_string(), "{text:?}");
    }
    let (ours_log, theirs_log) = (RefCell::new(Vec::new()), RefCell::new(Vec::new()));
    let ours = from_str_seed(text, Rec(&ours_log));
    let theirs = serde_json_seed(text, Rec(&theirs_log));
    if ours.is_ok() {
        assert!(
            theirs.is_ok(),
            "{text:?}: recorded fast Ok, serde_json {theirs:?}"
        );
        assert_eq!(ours_log.into_inner(), theirs_log.into_inner(), "{text:?}");
    }
    if !text.contains("skip") {
        assert_eq!(fast.is_ok(), ours.is_ok(), "{text:?}");
    }
    ours.is_ok()
}

/// Valid documents the fast path must answer itself.
const ORDINARY: &[&str] = &[
    "null",
    "true",
    "false",
    " \t\n\r null \t\n\r ",
    "0",
    "7",
    "-7",
    "1.0",
    "-0",
    "1e2",
    "1E-2",
    "2.5e+3",
    "-0.0",
    "18446744073709551615",
    "18446744073709551616",
    "-9223372036854775808",
    "-9223372036854775809",
    "123456789012345678901234567890",
    "1e308",
    "4.9e-324",
    "0.1",
    r#""""#,
    r#""plain""#,
    r#""é ü 日本 😀""#,
    r#""\" \\ \/ \b \f \n \r \t""#,
    r#""\u0041\u00e9\u65e5\uD83D\uDE00\u0000\u001f""#,
    r#""\uDBFF\uDFFF""#,
    r#""x\ny""#,
    "[]",
    "[ ]",
    "{}",
    "{ }",
    "[1,2,3]",
    "[ 1 , [ 2 , [ ] ] , { } ]",
    r#"{"a":1,"b":[true,false,null],"c":{"d":"e"}}"#,
    r#"{ "a" : 1 , "a" : 2 }"#,
    r#"{"k\u00e9y":"v","k\"":"\\"}"#,
    r#"{"skip":[1,{"x":[]},"s\ud800"],"keep":1}"#,
    r#"{"skip":{"a":{"b":{"c":[[[]]]}}},"keep":1}"#,
    r#"{"skip":-12.5e-3,"keep":1}"#,
    r#"{"skip":"\u0041\"","keep":1}"#,
    r#"{"skip" : { } , "keep" : [ ] }"#,
    r#"{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"a long text with \"quotes\" and\nnewlines, and more than thirty-two bytes of it"}]}}"#,
];

/// Invalid documents, and valid ones it may leave to serde_json; never a wrong `Ok`.
const OTHERS: &[&str] = &[
    "",
    " ",
    " \n\t\r",
    "nul",
    "nulll",
    "tru",
    "True",
    "fals",
    "-",
    "--1",
    "+1",
    "01",
    "-01",
    "00",
    "1.",
    ".5",
    "1e",
    "1e+",
    "1.e3",
    "1x",
    "1-2",
    "0x10",
    "1e400",
    "-1e400",
    "NaN",
    "Infinity",
    "\"",
    "\"abc",
    "\"a\u{1}b\"",
    "\"a\nb\"",
    "\"a\tb\"",
    "\"\u{1f}\"",
    r#""\x""#,
    r#""\u12""#,
    r#""\u12G4""#,
    r#""\uD800""#,
    r#""\uDC00""#,
    r#""\uD800\u0041""#,
    r#""\uD800\n""#,
    r#""\uD800x""#,
    r#""\uD800\uD800""#,
    r#""\"#,
    "[",
    "]",
    "[1,]",
    "[1 2]",
    "[,1]",
    "[1,,2]",
    "{",
    "}",
    r#"{"a":1,}"#,
    r#"{"a" 1}"#,
    r#"{"a"}"#,
    r#"{1:2}"#,
    r#"{a:1}"#,
    r#"{"a":1 "b":2}"#,
    r#"{,"a":1}"#,
    r#"{"a":}"#,
    "[1]x",
    "{} {}",
    "null null",
    r#"{"skip":[1,],"keep":1}"#,
    r#"{"skip":{"a":1,},"keep":1}"#,
    r#"{"skip":{"a" 1},"keep":1}"#,
    r#"{"skip":{1:1},"keep":1}"#,
    r#"{"skip":01,"keep":1}"#,
    r#"{"skip":1.,"keep":1}"#,
    r#"{"skip":-,"keep":1}"#,
    r#"{"skip":1e,"keep":1}"#,
    r#"{"skip":"\x","keep":1}"#,
    r#"{"skip":"\u12","keep":1}"#,
    "{\"skip\":\"a\u{0}b\",\"keep\":1}",
    r#"{"skip":[1 2],"keep":1}"#,
    r#"{"skip":[,"keep":1}"#,
    r#"{"skip":nul,"keep":1}"#,
    r#"{"skip":{"a":1]],"keep":1}"#,
    r#"{"skip":1e400,"keep":1}"#,
    r#"{"skip":"#,
];

#[test]
fn ordinary_documents_take_the_fast_path() {
    for text in ORDINARY {
        assert!(agrees(text), "fell back on {text:?}");
    }
}

#[test]
fn other_documents_never_disagree() {
    for text in OTHERS {
        agrees(text);
        // And inside containers, where what follows a value matters.
        agrees(&format!("[{text}]"));
        agrees(&format!("[{text},1]"));
        agrees(&format!("{{\"a\":{text}}}"));
        agrees(&format!("{{\"skip\":{text},\"keep\":1}}"));
    }
    for text in ORDINARY {
        for prefix in 0..text.len() {
            if let Some(cut) = text.get(..prefix) {
                agrees(cut);
            }
        }
    }
}

#[test]
fn errors_are_left_to_serde_json() {
    for text in OTHERS {
        if serde_json::from_str::<Value>(text).is_err() {
            assert!(
                from_str_seed(text, PhantomData::<Value>).is_err(),
                "{text:?}"
            );
        }
    }
}

#[test]
fn long_strings() {
    for len in [0, 1, 15, 16, 17, 31, 32, 33, 63, 64, 65, 100, 1000, 5000] {
        let body = "aé€😀".repeat(len / 4 + 1);
        let body: String = body.chars().take(len).collect();
        assert!(agrees(&format!("\"{body}\"")));
        assert!(agrees(&format!("[\"{body}\\n{body}\\\"\",\"{body}\"]")));
        assert!(agrees(&format!(
            "{{\"skip\":\"{body}\\u0041{body}\",\"keep\":1}}"
        )));
        // A control byte or a lone surrogate anywhere in it.
        for at in [0, len / 2, len] {
            let (a, b) = body.split_at(body.char_indices().nth(at).map_or(body.len(), |(i, _)| i));
            assert!(!agrees(&format!("\"{a}\u{1}{b}\"")));
            assert!(!agrees(&format!("\"{a}\\uDD00{b}\"")));
            assert!(!agrees(&format!(
                "{{\"skip\":\"{a}\u{1f}{b}\",\"keep\":1}}"
            )));
            assert!(!agrees(&format!("\"{a}\\{b}\"")));
        }
        // Unterminated.
        assert!(!agrees(&format!("\"{body}")));
        assert!(!agrees(&format!("\"{body}\\")));
    }
}

#[test]
fn deep_nesting() {
    for depth in [1, 50, 99, 100, 101, 127, 128, 129, 200] {
        let arrays = "[".repeat(depth) + &"]".repeat(depth);
        let objects = "{\"a\":".repeat(depth) + "1" + &"}".repeat(depth);
        let fast = agrees(&arrays);
        assert_eq!(fast, depth <= 100, "{depth}");
        assert_eq!(agrees(&objects), depth <= 100, "{depth}");
        // Skipped values have no recursion limit in serde_json; ours is 128 levels.
        let skipped = format!("{{\"skip\":{arrays},\"keep\":1}}");
        assert_eq!(agrees(&skipped), depth <= 128, "{depth}");
        let skipped = format!("{{\"skip\":{objects},\"keep\":1}}");
        assert_eq!(agrees(&skipped), depth <= 128, "{depth}");
    }
}

#[test]
fn keys_are_borrowed_unless_escaped() {
    let log = RefCell::new(Vec::new());
    from_str_seed(r#"{"a":"b","c\n":"d\u0041"}"#, Rec(&log)).unwrap();
    assert_eq!(
        log.into_inner(),
        [
            "map",
            "key borrowed \"a\"",
            "borrowed \"b\"",
            "key str \"c\\n\"",
            "str \"dA\"",
            "end map"
        ]
    );
}

#[derive(serde::Deserialize, Debug, PartialEq)]
struct Keep {
    keep: u64,
    #[serde(default)]
    list: Vec<i64>,
    #[serde(default)]
    name: Option<String>,
}

/// A derived struct: fields by `deserialize_identifier`, unknown ones skipped.
#[test]
fn derived_struct() {
    for text in [
        r#"{"skip":[1,{"x":null}],"keep":3,"list":[-1,2],"name":"n"}"#,
        r#"{"keep":3,"name":null}"#,
        r#"[3,[1],"n"]"#,
    ] {
        let fast = from_str_seed(text, PhantomData::<Keep>).unwrap();
        assert_eq!(fast, serde_json::from_str::<Keep>(text).unwrap());
    }
    for text in [
        r#"{"keep":-3}"#,
        r#"{"keep":"3"}"#,
        r#"{"keep":1.5}"#,
        r#"{"skip":[1,],"keep":1}"#,
        r#"{}"#,
    ] {
        assert!(serde_json::from_str::<Keep>(text).is_err());
        assert!(from_str_seed(text, PhantomData::<Keep>).is_err(), "{text}");
    }
}

/// Anything `Deserialize` can ask for: a visitor error the seed swallows still sends the
/// body to serde_json.
#[test]
fn swallowed_errors_fall_back() {
    struct Lenient;
    impl<'de> DeserializeSeed<'de> for Lenient {
        type Value = usize;
        fn deserialize<D: de::Deserializer<'de>>(
            self,
            d: D,
        ) -> std::result::Result<usize, D::Error> {
            d.deserialize_seq(self)
        }
    }
    impl<'de> Visitor<'de> for Lenient {
        type Value = usize;
        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("a list")
        }
        fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> std::result::Result<usize, A::Error> {
            let mut n = 0;
            while let Ok(Some(_)) | Err(_) = seq.next_element::<u8>() {
                n += 1;
                if n > 10 {
                    break;
                }
            }
            Ok(n)
        }
    }
    assert!(from_str_seed("[1,2]", Lenient).is_ok());
    assert!(from_str_seed("[1,300]", Lenient).is_err());
}

fn json_value() -> impl proptest::strategy::Strategy<Value = Value> {
    use proptest::prelude::*;
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        any::<f64>().prop_map(Value::from),
        (-1e6f64..1e6).prop_map(Value::from),
        "[a-z\"\\\\/\u{0}-\u{1f}é€😀\u{7f}\u{ffff} ]{0,40}".prop_map(Value::String),
        "[a-z\"\\\\\n\té€😀 ]{0,600}".prop_map(Value::String),
    ];
    leaf.prop_recursive(4, 40, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::vec(("[a-z\"\\\\é\n]{0,8}", inner), 0..6)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

/// Tokens and fragments, valid JSON or nearly.
fn json_soup() -> impl proptest::strategy::Strategy<Value = String> {
    use proptest::prelude::*;
    prop::collection::vec(
        prop::sample::select(vec![
            "[", "]", "{", "}", ",", ":", " ", "\n", "\"", "\"a\"", "\"skip\"", "\\", "\\u",
            "\\uD800", "\\uDC00", "00", "1", "-", ".", "e", "E", "+", "9", "null", "nul", "true",
            "false", "é", "\u{1}", "\\n", "\\x", "x",
        ]),
        0..24,
    )
    .prop_map(|parts| parts.concat())
}

proptest::proptest! {
    #![proptest_config(crate::testing::proptest_cases(512))]

    #[test]
    fn random_values_take_the_fast_path(v in json_value()) {
        let compact = v.to_string();
        let pretty = serde_json::to_string_pretty(&v).unwrap();
        proptest::prop_assert!(agrees(&compact), "{}", compact);
        proptest::prop_assert!(agrees(&pretty), "{}", pretty);
        let skipped = format!("{{\"skip\":{compact},\"keep\":1}}");
        proptest::prop_assert!(agrees(&skipped), "{}", skipped);
    }

    #[test]
    fn random_numbers(
        text in "-?(0|[1-9][0-9]{0,40})(\\.[0-9]{1,25})?([eE][+-]?[0-9]{1,4})?",
    ) {
        let fast = agrees(&text);
        proptest::prop_assert_eq!(fast, serde_json::from_str::<Value>(&text).is_ok());
        agrees(&format!("[{text},{text}]"));
        agrees(&format!("{{\"skip\":{text},\"keep\":{text}}}"));
    }

    #[test]
    fn random_soup_never_disagrees(soup in json_soup()) {
        agrees(&soup);
        agrees(&format!("[{soup}]"));
        agrees(&format!("{{\"skip\":{soup},\"keep\":1}}"));
        agrees(&format!("{{\"skip\":[{soup}],\"keep\":1}}"));
        agrees(&format!("{{\"skip\":\"{soup}\",\"keep\":1}}"));
        agrees(&format!("\"{soup}\""));
    }
}
