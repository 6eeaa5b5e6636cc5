//! Process categories by name rules. Users extend them in the config
//! (`[[hardware.process_rules]] category = "ide" names = ["helix"]`); their rules win.

use crate::config::ProcessRule;

fn rule(category: &str, names: &[&str]) -> ProcessRule {
    ProcessRule {
        category: category.into(),
        names: names.iter().map(|n| n.to_string()).collect(),
    }
}

pub fn default_rules() -> Vec<ProcessRule> {
    vec![
        rule(
            "inference",
            &[
                "ollama",
                "llama-server",
                "llama.cpp",
                "llamafile",
                "lm studio",
                "lmstudio",
                "lms",
                "vllm",
                "koboldcpp",
                "text-generation",
                "tabbyapi",
                "localai",
                "mlx_lm",
            ],
        ),
        rule(
            "ide",
            &[
                "code",
                "cursor",
                "idea",
                "pycharm",
                "clion",
                "goland",
                "rustrover",
                "webstorm",
                "nvim",
                "vim",
                "emacs",
                "zed",
                "sublime",
                "rust-analyzer",
                "xcode",
                "android studio",
            ],
        ),
        rule(
            "browser",
            &[
                "firefox",
                "chrome",
                "chromium",
                "brave",
                "safari",
                "msedge",
                "opera",
                "vivaldi",
                "librewolf",
            ],
        ),
        rule(
            "system",
            &[
                "systemd",
                "kthreadd",
                "kworker",
                "ksoftirqd",
                "dbus",
                "sshd",
                "init",
                "launchd",
                "xorg",
                "wayland",
                "pipewire",
                "pulseaudio",
                "cron",
                "udev",
                "journald",
                "networkmanager",
                "containerd",
                "dockerd",
                "windowserver",
                "kernel_task",
                "rcu_",
            ],
        ),
    ]
}

/// The category of a process: the first matching user rule, then the built-in rules.
pub fn categorize(name: &str, cmdline: &str, user_rules: &[ProcessRule]) -> String {
    let name = name.to_lowercase();
    let program = cmdline
        .split_whitespace()
        .next()
        .unwrap_or("")
        .rsplit('/')
        .next()
        .unwrap_or("")
        .to_lowercase();
    let matches = |needle: &String| {
        // Short names match whole words only, so "code" does not catch "decoder".
        if needle.len() <= 4 {
            name == *needle
                || program == *needle
                || name
                    .split(|c: char| !c.is_alphanumeric())
                    .any(|w| w == needle)
        } else {
            name.contains(needle.as_str()) || program.contains(needle.as_str())
        }
    };
    user_rules
        .iter()
        .chain(default_rules().iter())
        .find(|r| r.names.iter().any(matches))
        .map(|r| r.category.clone())
        .unwrap_or_else(|| "user_app".into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn categorizes_by_name_and_program() {
        let cases = [
            ("ollama", "/usr/local/bin/ollama serve", "inference"),
            (
                "python3",
                "python3 -m vllm.entrypoints.openai.api_server",
                "user_app",
            ),
            ("llama-server", "./llama-server -m model.gguf", "inference"),
            ("code", "/usr/share/code/code --type=renderer", "ide"),
            ("ffmpeg-decoder", "ffmpeg", "user_app"),
            ("firefox-esr", "/usr/lib/firefox-esr/firefox-esr", "browser"),
            (
                "systemd-journald",
                "/lib/systemd/systemd-journald",
                "system",
            ),
            ("spotify", "spotify", "user_app"),
        ];
        for (name, cmd, want) in cases {
            assert_eq!(categorize(name, cmd, &[]), want, "{name}");
        }
    }

    #[test]
    fn user_rules_extend_and_win() {
        let rules = vec![rule("ide", &["helix"]), rule("inference", &["spotify"])];
        assert_eq!(categorize("helix", "hx", &rules), "ide");
        assert_eq!(categorize("spotify", "spotify", &rules), "inference");
    }
}
