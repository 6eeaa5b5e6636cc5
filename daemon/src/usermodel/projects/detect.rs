//! Finding a project from a path inside it, and reading what its files say. Only what the
//! person's tools point at is read: the walk goes up from that path to the enclosing git
//! repository (or build file), never above the home directory, and the analysis reads the
//! project's own tree, bounded, skipping hidden, vendored and build directories.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use mnemo_protocol::project::LanguageCount;

/// Files whose presence makes a directory a project, and the build system each says.
const MARKERS: &[(&str, &str)] = &[
    ("Cargo.toml", "cargo"),
    ("package.json", "npm"),
    ("pyproject.toml", "pip"),
    ("setup.py", "pip"),
    ("go.mod", "go"),
    ("pom.xml", "maven"),
    ("build.gradle", "gradle"),
    ("build.gradle.kts", "gradle"),
    ("CMakeLists.txt", "cmake"),
    ("meson.build", "meson"),
    ("Gemfile", "bundler"),
    ("composer.json", "composer"),
    ("mix.exs", "mix"),
    ("Makefile", "make"),
];

/// Most directory levels walked up from a path.
const MAX_UP: usize = 16;
/// Most entries the analysis reads, and how deep.
const MAX_ENTRIES: usize = 20_000;
const MAX_DEPTH: usize = 8;
const SKIPPED_DIRS: &[&str] = &[
    "node_modules",
    "target",
    "vendor",
    "build",
    "dist",
    "out",
    "__pycache__",
    "venv",
    "env",
    "site-packages",
    "bin",
    "obj",
];

/// The project root a path lies in: the nearest enclosing git repository, else the nearest
/// directory with a build file; never the home directory or `/` themselves.
pub fn root_of(path: &Path, home: Option<&Path>) -> Option<PathBuf> {
    let start = if path.is_dir() { path } else { path.parent()? };
    let mut marked = None;
    for dir in start.ancestors().take(MAX_UP) {
        if Some(dir) == home || dir.parent().is_none() {
            break;
        }
        if dir.join(".git").exists() {
            return Some(dir.to_path_buf());
        }
        if marked.is_none() && MARKERS.iter().any(|(m, _)| dir.join(m).is_file()) {
            marked = Some(dir.to_path_buf());
        }
    }
    marked
}

/// What a project's files say.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Facts {
    pub name: String,
    pub description: Option<String>,
    pub repo_url: Option<String>,
    pub languages: Vec<LanguageCount>,
    pub frameworks: Vec<String>,
    pub build_system: Option<String>,
}

fn language(ext: &str) -> Option<&'static str> {
    Some(match ext {
        "rs" => "Rust",
        "py" => "Python",
        "ts" | "tsx" => "TypeScript",
        "js" | "jsx" | "mjs" | "cjs" => "JavaScript",
        "go" => "Go",
        "java" => "Java",
        "kt" | "kts" => "Kotlin",
        "swift" => "Swift",
        "c" | "h" => "C",
        "cc" | "cpp" | "cxx" | "hpp" | "hh" => "C++",
        "cs" => "C#",
        "rb" => "Ruby",
        "php" => "PHP",
        "scala" => "Scala",
        "zig" => "Zig",
        "lua" => "Lua",
        "dart" => "Dart",
        "ex" | "exs" => "Elixir",
        "hs" => "Haskell",
        "sh" | "bash" | "zsh" => "Shell",
        "html" | "htm" => "HTML",
        "css" | "scss" => "CSS",
        "vue" => "Vue",
        "svelte" => "Svelte",
        _ => return None,
    })
}

/// Frameworks a build file names, by the words that give them away.
const FRAMEWORKS: &[(&str, &str)] = &[
    ("tokio", "tokio"),
    ("axum", "axum"),
    ("actix-web", "actix-web"),
    ("rocket", "rocket"),
    ("bevy", "bevy"),
    ("ratatui", "ratatui"),
    ("lancedb", "lancedb"),
    ("\"react\"", "React"),
    ("\"next\"", "Next.js"),
    ("\"vue\"", "Vue"),
    ("\"svelte\"", "Svelte"),
    ("\"express\"", "Express"),
    ("\"@angular/core\"", "Angular"),
    ("\"electron\"", "Electron"),
    ("django", "Django"),
    ("flask", "Flask"),
    ("fastapi", "FastAPI"),
    ("torch", "PyTorch"),
    ("pandas", "pandas"),
    ("gin-gonic", "Gin"),
    ("spring-boot", "Spring Boot"),
    ("rails", "Rails"),
];

fn read_small(path: &Path) -> Option<String> {
    let meta = std::fs::metadata(path).ok()?;
    (meta.len() <= 1 << 20)
        .then(|| std::fs::read_to_string(path).ok())
        .flatten()
}

/// The first `name = "…"` (TOML) or `"name": "…"` (JSON) in a build file.
fn declared_name(text: &str) -> Option<String> {
    for line in text.lines() {
        let line = line.trim();
        let value = line
            .strip_prefix("name")
            .map(|r| r.trim_start())
            .and_then(|r| r.strip_prefix('='))
            .or_else(|| {
                line.strip_prefix("\"name\"")
                    .and_then(|r| r.trim_start().strip_prefix(':'))
            });
        if let Some(v) = value {
            let v = v.trim().trim_end_matches(',').trim_matches('"').trim();
            if !v.is_empty() {
                return Some(v.to_string());
            }
        }
    }
    None
}

/// The README's first paragraph of prose (no headings, badges or HTML), at most 300 chars.
fn description(root: &Path) -> Option<String> {
    let text = [
        "README.md",
        "README",
        "README.rst",
        "README.txt",
        "readme.md",
    ]
    .iter()
    .find_map(|n| read_small(&root.join(n)))?;
    let mut paragraph = Vec::new();
    for line in text.lines() {
        let t = line.trim();
        let noise = t.starts_with('#')
            || t.starts_with('[')
            || t.starts_with('!')
            || t.starts_with('<')
            || t.starts_with("==")
            || t.starts_with("--")
            || t.starts_with("```");
        if t.is_empty() || noise {
            if !paragraph.is_empty() {
                break;
            }
            continue;
        }
        paragraph.push(t);
    }
    let joined = paragraph.join(" ");
    (!joined.is_empty()).then(|| joined.chars().take(300).collect())
}

/// `url = …` of `[remote "origin"]` in the repository's config.
fn origin(root: &Path) -> Option<String> {
    let config = read_small(&root.join(".git").join("config"))?;
    let mut in_origin = false;
    for line in config.lines() {
        let t = line.trim();
        if t.starts_with('[') {
            in_origin = t == "[remote \"origin\"]";
        } else if in_origin {
            if let Some(url) = t.strip_prefix("url") {
                return Some(url.trim_start().trim_start_matches('=').trim().to_string());
            }
        }
    }
    None
}

/// Counts the tree's files by language, bounded.
fn languages(root: &Path) -> Vec<LanguageCount> {
    let mut counts: BTreeMap<&'static str, u64> = BTreeMap::new();
    let mut stack = vec![(root.to_path_buf(), 0usize)];
    let mut seen = 0usize;
    while let Some((dir, depth)) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            seen += 1;
            if seen > MAX_ENTRIES {
                break;
            }
            let name = entry.file_name();
            let name = name.to_string_lossy();
            let Ok(kind) = entry.file_type() else {
                continue;
            };
            if kind.is_dir() {
                if depth < MAX_DEPTH
                    && !name.starts_with('.')
                    && !SKIPPED_DIRS.contains(&name.as_ref())
                {
                    stack.push((entry.path(), depth + 1));
                }
            } else if kind.is_file() {
                if let Some(lang) = name
                    .rsplit_once('.')
                    .and_then(|(_, ext)| language(&ext.to_lowercase()))
                {
                    *counts.entry(lang).or_default() += 1;
                }
            }
        }
    }
    let mut list: Vec<LanguageCount> = counts
        .into_iter()
        .map(|(language, files)| LanguageCount {
            language: language.to_string(),
            files,
        })
        .collect();
    list.sort_by(|a, b| b.files.cmp(&a.files).then(a.language.cmp(&b.language)));
    list
}

/// Reads a project's files: name, description, remote, languages, frameworks, build system.
pub fn analyze(root: &Path) -> Facts {
    let mut build_system = None;
    let mut name = None;
    let mut frameworks = Vec::new();
    for (marker, system) in MARKERS {
        let Some(text) = read_small(&root.join(marker)) else {
            continue;
        };
        if build_system.is_none() {
            build_system = Some(
                match *system {
                    "npm" if root.join("pnpm-lock.yaml").exists() => "pnpm",
                    "npm" if root.join("yarn.lock").exists() => "yarn",
                    "pip" if text.contains("[tool.poetry]") => "poetry",
                    other => other,
                }
                .to_string(),
            );
        }
        if name.is_none() && matches!(*marker, "Cargo.toml" | "package.json" | "pyproject.toml") {
            name = declared_name(&text);
        }
        if name.is_none() && *marker == "go.mod" {
            name = text
                .lines()
                .find_map(|l| l.strip_prefix("module "))
                .and_then(|m| m.trim().rsplit('/').next().map(str::to_string));
        }
        let lower = text.to_lowercase();
        for (word, framework) in FRAMEWORKS {
            if lower.contains(word) && !frameworks.iter().any(|f| f == framework) {
                frameworks.push(framework.to_string());
            }
        }
    }
    Facts {
        name: name.unwrap_or_else(|| {
            root.file_name()
                .map(|n| n.to_string_lossy().to_string())
                .unwrap_or_else(|| root.display().to_string())
        }),
        description: description(root),
        repo_url: origin(root),
        languages: languages(root),
        frameworks,
        build_system,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(root: &Path, path: &str, text: &str) {
        let p = root.join(path);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }

    #[test]
    fn a_git_repository_is_found_from_a_file_deep_inside_and_read() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("atlas");
        write(
            &root,
            ".git/config",
            "[core]\n[remote \"origin\"]\n\turl = git@example.com:ana/atlas.git\n",
        );
        write(
            &root,
            "Cargo.toml",
            "[package]\nname = \"atlas-core\"\n[dependencies]\ntokio = \"1\"\n",
        );
        write(
            &root,
            "README.md",
            "# Atlas\n\n[![ci](x)](y)\n\nMaps for hikers,\noffline.\n\nMore.",
        );
        write(&root, "crates/geo/src/lib.rs", "");
        write(&root, "crates/geo/src/tile.rs", "");
        write(&root, "web/app.ts", "");
        write(&root, "target/debug/junk.rs", "");
        let found = root_of(&root.join("crates/geo/src/lib.rs"), None).unwrap();
        assert_eq!(found, root);
        let facts = analyze(&found);
        assert_eq!(facts.name, "atlas-core");
        assert_eq!(
            facts.description.as_deref(),
            Some("Maps for hikers, offline.")
        );
        assert_eq!(
            facts.repo_url.as_deref(),
            Some("git@example.com:ana/atlas.git")
        );
        assert_eq!(facts.build_system.as_deref(), Some("cargo"));
        assert_eq!(facts.frameworks, ["tokio"]);
        let langs: Vec<(String, u64)> = facts
            .languages
            .into_iter()
            .map(|l| (l.language, l.files))
            .collect();
        assert_eq!(
            langs,
            [("Rust".to_string(), 2), ("TypeScript".to_string(), 1)]
        );
    }

    #[test]
    fn a_build_file_without_git_marks_a_project_and_home_never_does() {
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path();
        write(home, "Makefile", "all:\n");
        write(
            home,
            "tool/package.json",
            "{\n  \"name\": \"tool\",\n  \"dependencies\": {\"react\": \"18\"}\n}",
        );
        write(home, "tool/yarn.lock", "");
        assert_eq!(
            root_of(&home.join("tool/package.json"), Some(home)),
            Some(home.join("tool"))
        );
        assert_eq!(root_of(&home.join("notes"), Some(home)), None);
        let facts = analyze(&home.join("tool"));
        assert_eq!(facts.build_system.as_deref(), Some("yarn"));
        assert_eq!(facts.frameworks, ["React"]);
    }
}
