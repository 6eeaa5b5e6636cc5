//! `--generate-man`: every binary prints its own man page (roff) from its clap definition, so
//! the pages packages ship can never disagree with `--help`.

/// Prints the man page and exits when the only argument is `--generate-man`.
pub fn print_if_asked(command: impl FnOnce() -> clap::Command) {
    let mut args = std::env::args().skip(1);
    if args.next().as_deref() != Some("--generate-man") || args.next().is_some() {
        return;
    }
    let mut out = std::io::stdout().lock();
    let code = match render(command(), &mut out) {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("cannot write the man page: {e}");
            1
        }
    };
    std::process::exit(code);
}

/// The page as clap_mangen renders it, but for its commands: listed here with what each
/// does, every level of them, rather than as `mnemo-import(1)` pages that are not shipped.
fn render(command: clap::Command, out: &mut dyn std::io::Write) -> std::io::Result<()> {
    let mut command = command;
    command.build();
    let page = clap_mangen::Man::new(command.clone());
    page.render_title(out)?;
    page.render_name_section(out)?;
    page.render_synopsis_section(out)?;
    page.render_description_section(out)?;
    if command.get_arguments().any(|a| !a.is_hide_set()) {
        page.render_options_section(out)?;
    }
    if command.get_subcommands().any(|c| !c.is_hide_set()) {
        writeln!(out, ".SH COMMANDS")?;
        writeln!(
            out,
            "Each command's options: \\fB{} COMMAND \\-\\-help\\fR.",
            roff_text(command.get_name())
        )?;
        commands(&command, command.get_name(), out)?;
    }
    if command.get_after_long_help().is_some() || command.get_after_help().is_some() {
        page.render_extra_section(out)?;
    }
    if command.get_version().is_some() {
        page.render_version_section(out)?;
    }
    Ok(())
}

/// Each visible subcommand of `command` (reached as `path`), then its own, depth first.
fn commands(
    command: &clap::Command,
    path: &str,
    out: &mut dyn std::io::Write,
) -> std::io::Result<()> {
    for sub in command
        .get_subcommands()
        .filter(|c| !c.is_hide_set() && c.get_name() != "help")
    {
        let path = format!("{path} {}", sub.get_name());
        writeln!(out, ".TP\n\\fB{}\\fR", roff_text(&path))?;
        if let Some(about) = sub.get_about() {
            for line in about.to_string().lines() {
                writeln!(out, "{}", roff_line(line))?;
            }
        }
        commands(sub, &path, out)?;
    }
    Ok(())
}

/// `text` as roff prints it: backslashes and hyphens escaped.
fn roff_text(text: &str) -> String {
    text.replace('\\', "\\e").replace('-', "\\-")
}

/// A line of running text: escaped, and never taken for a request.
fn roff_line(line: &str) -> String {
    let text = roff_text(line);
    if text.starts_with('.') || text.starts_with('\'') {
        format!("\\&{text}")
    } else {
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commands_are_listed_on_the_page_and_no_page_is_referred_to() {
        let command = clap::Command::new("tool")
            .version("1.0")
            .about("A tool.")
            .subcommand(
                clap::Command::new("notes")
                    .about("Manage notes.\n.dots stay text")
                    .subcommand(clap::Command::new("add").about("Add a note.")),
            )
            .subcommand(clap::Command::new("secret").hide(true));
        let mut page = Vec::new();
        render(command, &mut page).unwrap();
        let page = String::from_utf8(page).unwrap();
        assert!(page.contains(".SH COMMANDS"), "{page}");
        assert!(page.contains("\\fBtool notes\\fR\nManage notes."), "{page}");
        assert!(page.contains("\\&.dots stay text"), "{page}");
        assert!(
            page.contains("\\fBtool notes add\\fR\nAdd a note."),
            "{page}"
        );
        assert!(!page.contains("(1)"), "no page is referred to: {page}");
        assert!(!page.contains("secret"), "{page}");
    }
}
