//! A private Secret Service for keyring tests: a session bus of its own (`dbus-daemon`) and
//! an unlocked GNOME keyring on it, every file in a temp dir, both stopped on `Drop`. The
//! developer's own session and keyring are never touched.

use std::io::Write;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use tempfile::TempDir;

pub struct SecretService {
    /// What `DBUS_SESSION_BUS_ADDRESS` must say to reach it.
    pub address: String,
    bus: Child,
    keyring: Option<Child>,
    _dir: TempDir,
}

impl SecretService {
    /// Started and answering, or why not: `dbus-daemon` or
    /// `gnome-keyring-daemon` is not installed (`packaging/deps.sh --test` installs both).
    pub fn start() -> Result<SecretService, String> {
        for tool in ["dbus-daemon", "gnome-keyring-daemon", "dbus-send"] {
            if !on_path(tool) {
                return Err(format!("{tool} is not installed"));
            }
        }
        let dir = super::private_dir();
        let address = format!("unix:path={}", dir.path().join("bus").display());
        let bus = Command::new("dbus-daemon")
            .args(["--session", "--nofork", "--nosyslog"])
            .arg(format!("--address={address}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| format!("dbus-daemon: {e}"))?;
        let mut service = SecretService {
            address,
            bus,
            keyring: None,
            _dir: dir,
        };
        service.wait_for("the session bus", "org.freedesktop.DBus")?;
        let home = service._dir.path();
        for sub in ["data", "run"] {
            std::fs::create_dir_all(home.join(sub)).map_err(|e| e.to_string())?;
        }
        // `--unlock` takes the login keyring's password on stdin and creates it unlocked.
        let mut keyring = Command::new("gnome-keyring-daemon")
            .args(["--foreground", "--unlock", "--components=secrets"])
            .env("DBUS_SESSION_BUS_ADDRESS", &service.address)
            .env("HOME", home)
            .env("XDG_DATA_HOME", home.join("data"))
            .env("XDG_RUNTIME_DIR", home.join("run"))
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| format!("gnome-keyring-daemon: {e}"))?;
        let mut stdin = keyring.stdin.take().expect("piped stdin");
        stdin
            .write_all(b"mnemo-test-password")
            .map_err(|e| e.to_string())?;
        drop(stdin);
        service.keyring = Some(keyring);
        service.wait_for("the keyring", "org.freedesktop.secrets")?;
        Ok(service)
    }

    fn wait_for(&self, what: &str, name: &str) -> Result<(), String> {
        let deadline = Instant::now() + Duration::from_secs(20);
        while Instant::now() < deadline {
            let owned = Command::new("dbus-send")
                .env("DBUS_SESSION_BUS_ADDRESS", &self.address)
                .args([
                    "--session",
                    "--print-reply",
                    "--dest=org.freedesktop.DBus",
                    "/org/freedesktop/DBus",
                    "org.freedesktop.DBus.NameHasOwner",
                ])
                .arg(format!("string:{name}"))
                .output()
                .map(|o| String::from_utf8_lossy(&o.stdout).contains("boolean true"))
                .unwrap_or(false);
            if owned {
                return Ok(());
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        Err(format!("{what} did not come up within 20 s"))
    }
}

fn on_path(tool: &str) -> bool {
    std::env::var_os("PATH")
        .is_some_and(|path| std::env::split_paths(&path).any(|d| d.join(tool).is_file()))
}

impl Drop for SecretService {
    fn drop(&mut self) {
        for child in self.keyring.iter_mut().chain([&mut self.bus]) {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}
