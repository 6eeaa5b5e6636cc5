//! `--generate-man`: every binary prints its own man page (roff) from its clap definition, so
//! the pages packages ship can never disagree with `--help`.

/// Prints the man page and exits when the only argument is `--generate-man`.
pub fn print_if_asked(command: impl FnOnce() -> clap::Command) {
    let mut args = std::env::args().skip(1);
    if args.next().as_deref() != Some("--generate-man") || args.next().is_some() {
        return;
    }
    let page = clap_mangen::Man::new(command());
    let mut out = std::io::stdout().lock();
    let code = match page.render(&mut out) {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("cannot write the man page: {e}");
            1
        }
    };
    std::process::exit(code);
}
