//! Encryption at rest, through the real daemon and CLI: no word of a memory on disk, search
//! by its words still works, and a start with a wrong or missing key refuses and changes
//! nothing.
#![cfg(unix)]

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use mnemo_tests::{disk_holds, entries_under, Daemon, Embedder, SecretService};
use serde_json::Value;

fn json(out: &std::process::Output) -> Value {
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("JSON output")
}

fn search_ids(daemon: &Daemon, query: &str, mode: &str) -> Vec<String> {
    let r = json(&daemon.cli(&["search", query, "--mode", mode, "--json"], ""));
    r["hits"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h["memory"]["id"].as_str().unwrap().to_string())
        .collect()
}

/// Every file under `dir` with its length: what a refused start must leave as it was.
fn listing(dir: &Path) -> Vec<(PathBuf, u64)> {
    let mut out: Vec<(PathBuf, u64)> = entries_under(dir)
        .into_iter()
        .filter(|(_, meta)| meta.is_file())
        .map(|(path, meta)| (path, meta.len()))
        .collect();
    out.sort();
    out
}

/// mnemod started by hand on `daemon`'s paths: it must refuse; answers what it said.
fn refused_start(daemon: &Daemon) -> String {
    let out = daemon.command().output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).to_string();
    assert!(!out.status.success(), "mnemod started: {stderr}");
    stderr
}

#[test]
fn an_encrypted_store_holds_no_word_finds_by_words_and_opens_only_with_its_key() {
    let mut daemon =
        Daemon::start_configured(Embedder::Hashed, "[security]\nencrypt = true\n", &[]);
    let key = daemon.home.path().join("mnemo.key");
    let mode = std::fs::metadata(&key)
        .expect("key file made")
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o600);

    let secret = "The quokka Zyxwvutsr hides the spare key under Rottnestia's third stone";
    let added = json(&daemon.cli(
        &[
            "add",
            secret,
            "--metadata",
            r#"{"pin":"Qmetapin77"}"#,
            "--json",
        ],
        "",
    ));
    let id = added["id"].as_str().unwrap().to_string();
    for i in 0..20 {
        daemon.cli(
            &[
                "add",
                &format!("an ordinary note number {i} about the weather"),
            ],
            "",
        );
    }
    let db = daemon.data_dir.join("db");
    for word in [
        "Zyxwvutsr",
        "zyxwvutsr",
        "Rottnestia",
        "rottnestia",
        "Qmetapin77",
        "quokka",
    ] {
        assert!(
            !disk_holds(&db, word.as_bytes()),
            "{word} is on disk: {:?}",
            std::process::Command::new("grep")
                .args(["-rl", word])
                .arg(&db)
                .output()
                .map(|o| String::from_utf8_lossy(&o.stdout).to_string())
        );
    }
    for mode in ["text", "hybrid"] {
        let hits = search_ids(&daemon, "zyxwvutsr", mode);
        assert_eq!(hits.first(), Some(&id), "{mode}: {hits:?}");
    }
    assert_eq!(
        search_ids(&daemon, "Rottnestia's stones", "text").first(),
        Some(&id)
    );
    let got = json(&daemon.cli(&["get", &id, "--json"], ""));
    assert_eq!(got["content"], secret);
    assert_eq!(got["metadata"]["pin"], "Qmetapin77");
    let again = json(&daemon.cli(&["add", secret, "--json"], ""));
    assert_eq!(
        again["id"].as_str(),
        Some(id.as_str()),
        "re-adding stores nothing new"
    );
    let status = json(&daemon.cli(&["status", "--json"], ""));
    assert_eq!(status["encryption"]["mode"], "on", "{status}");
    daemon.stop();

    // A wrong key, then no key: each start refuses, says why, and writes nothing.
    let before = listing(&db);
    let right = std::fs::read(&key).unwrap();
    std::fs::write(&key, format!("{}\n", "ab".repeat(32))).unwrap();
    let said = refused_start(&daemon);
    assert!(
        said.contains("not this store's key") && said.contains("Nothing was changed"),
        "{said}"
    );
    std::fs::remove_file(&key).unwrap();
    let said = refused_start(&daemon);
    assert!(said.contains("no key file"), "{said}");
    assert_eq!(listing(&db), before, "a refused start changed the database");

    std::fs::write(&key, right).unwrap();
    std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o600)).unwrap();
    daemon.restart();
    assert_eq!(search_ids(&daemon, "zyxwvutsr", "text").first(), Some(&id));
}

#[test]
fn mnemo_encrypt_converts_a_plain_store_and_doctor_reports_it() {
    let daemon = Daemon::start();
    let secret = "Plainword Vexillotrix was written before encryption was turned on";
    let id = json(&daemon.cli(&["add", secret, "--json"], ""))["id"]
        .as_str()
        .unwrap()
        .to_string();
    for i in 0..40 {
        daemon.cli(&["add", &format!("filler memory {i} about gardening")], "");
    }
    let updated = json(&daemon.cli(
        &[
            "update",
            &id,
            "--content",
            &format!("{secret}, twice"),
            "--json",
        ],
        "",
    ));
    let current = updated["id"].as_str().unwrap().to_string();
    let db = daemon.data_dir.join("db");
    assert!(disk_holds(&db, b"Vexillotrix"), "plain before");
    let status = json(&daemon.cli(&["status", "--json"], ""));
    assert_eq!(status["encryption"]["mode"], "off");

    let done = json(&daemon.cli(&["encrypt", "--json"], ""));
    assert_eq!(
        done["sealed"], 42,
        "41 memories and the old version: {done}"
    );
    assert_eq!(
        PathBuf::from(done["key"]["path"].as_str().unwrap()),
        daemon.home.path().join("mnemo.key")
    );
    assert!(!disk_holds(&db, b"Vexillotrix"), "the plain text is gone");
    assert!(!disk_holds(&db, b"vexillotrix"), "the plain terms are gone");
    assert_eq!(
        search_ids(&daemon, "Vexillotrix", "text"),
        vec![current.clone()]
    );
    let history = json(&daemon.cli(&["history", &current, "--json"], ""));
    assert!(
        history.to_string().contains("encryption was turned on"),
        "{history}"
    );

    let status = json(&daemon.cli(&["status", "--json"], ""));
    assert_eq!(status["encryption"]["mode"], "on");
    assert_eq!(
        (
            status["encryption"]["done"].as_u64(),
            status["encryption"]["total"].as_u64()
        ),
        (Some(42), Some(42))
    );
    let again = json(&daemon.cli(&["encrypt", "--json"], ""));
    assert_eq!(again["mode"], "on", "a second run says it is done: {again}");
    let doctor = daemon.cli(&["doctor", "--json"], "");
    let checks: Value = serde_json::from_slice(&doctor.stdout).unwrap();
    let check = checks
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "encryption")
        .unwrap_or_else(|| panic!("doctor has no encryption check: {checks}"));
    assert_eq!(check["verdict"], "ok", "{check}");
}

/// With a Secret Service on the session bus, a new encrypted store keeps its key there, not
/// in a file; the store opens only while the keyring answers, and says where its key is.
#[test]
fn the_key_lives_in_the_keyring_when_one_answers() {
    let service = match SecretService::start() {
        Ok(service) => service,
        Err(why) => {
            mnemo_tests::cannot_run("the_key_lives_in_the_keyring_…", &why);
            return;
        }
    };
    let mut daemon = Daemon::configured(Embedder::Hashed, "[security]\nencrypt = true\n", &[]);
    daemon.set_session_bus(Some(&service.address));
    daemon.restart();
    assert!(
        !daemon.home.path().join("mnemo.key").exists(),
        "no key file when the keyring holds the key"
    );
    let status = json(&daemon.cli(&["status", "--json"], ""));
    let key = &status["encryption"]["key"];
    assert_eq!(status["encryption"]["mode"], "on", "{status}");
    assert_eq!(key["store"], "keyring", "{status}");
    assert_eq!(key["service"], "mnemo", "{status}");
    let secret = "Keyringword Plumbatrix opens the shed behind the orchard";
    let id = json(&daemon.cli(&["add", secret, "--json"], ""))["id"]
        .as_str()
        .unwrap()
        .to_string();
    let db = daemon.data_dir.join("db");
    assert!(!disk_holds(&db, b"Plumbatrix"));
    assert!(!disk_holds(daemon.home.path(), b"Plumbatrix"));
    let doctor = daemon.cli(&["doctor"], "");
    let said = String::from_utf8_lossy(&doctor.stdout);
    assert!(said.contains("Secret Service keyring"), "{said}");
    daemon.stop();

    // Without the keyring the key is nowhere to be found: the start refuses and says so.
    daemon.set_session_bus(None);
    let before = listing(&db);
    let said = refused_start(&daemon);
    assert!(
        said.contains("keyring") && said.contains("Nothing was changed"),
        "{said}"
    );
    assert_eq!(listing(&db), before, "a refused start changed the database");

    // `key_store = "keyring"` with no keyring is a clear error too, not a quiet key file.
    let strict = Daemon::configured(
        Embedder::Hashed,
        "[security]\nencrypt = true\nkey_store = \"keyring\"\n",
        &[],
    );
    let said = refused_start(&strict);
    assert!(said.contains("keyring did not answer"), "{said}");
    assert!(!strict.home.path().join("mnemo.key").exists());

    daemon.set_session_bus(Some(&service.address));
    daemon.restart();
    let got = json(&daemon.cli(&["get", &id, "--json"], ""));
    assert_eq!(got["content"], secret);
    assert_eq!(search_ids(&daemon, "plumbatrix", "text"), vec![id]);
}
