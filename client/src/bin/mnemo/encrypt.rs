//! `mnemo encrypt`: converts a plain store to encrypted at rest, with progress.

use std::path::Path;
use std::time::Duration;

use mnemo_protocol::daemon::{Encrypt, EncryptionMode, Status};
use mnemo_protocol::NoParams;

use crate::connect;
use crate::output::Output;
use crate::progress::ProgressReport;

pub async fn run(socket: &Path, out: &Output) -> anyhow::Result<()> {
    let mut watcher = connect(socket).await?;
    let before = watcher.call::<Status>(&NoParams {}).await?.encryption;
    if before.mode == EncryptionMode::On {
        let key = before
            .key
            .as_ref()
            .map(ToString::to_string)
            .unwrap_or_default();
        out.value(&before, || {
            format!("memories are already encrypted at rest (key {key})")
        });
        return Ok(());
    }
    // The call answers when every memory is sealed; a second connection watches progress.
    let mut caller = connect(socket).await?;
    let mut call = tokio::spawn(async move { caller.call::<Encrypt>(&NoParams {}).await });
    let mut progress = ProgressReport::new(out.json);
    let result = loop {
        tokio::select! {
            result = &mut call => break result?,
            _ = tokio::time::sleep(Duration::from_millis(250)) => {
                if progress.shows() {
                    let e = watcher.call::<Status>(&NoParams {}).await?.encryption;
                    progress.show("sealing", e.done, e.total);
                }
            }
        }
    };
    progress.finish();
    let done = result?;
    out.value(&done, || {
        format!(
            "encrypted {} memory rows at rest; the key is in the {}: back it up — without it \
             the memories cannot be read",
            done.sealed, done.key
        )
    });
    Ok(())
}
