//! Line framing with a size limit: a line longer than the limit is skipped to its newline
//! without being kept in memory, and reported as too large.

use tokio::io::{AsyncBufRead, AsyncBufReadExt};

#[derive(Debug, PartialEq, Eq)]
pub enum Frame {
    Line(Vec<u8>),
    TooLarge {
        bytes: usize,
    },
    /// The peer closed the connection.
    End,
}

pub async fn read_frame<R: AsyncBufRead + Unpin>(
    reader: &mut R,
    limit: usize,
    line: &mut Vec<u8>,
) -> std::io::Result<Frame> {
    line.clear();
    let mut skipped = 0usize;
    loop {
        let available = reader.fill_buf().await?;
        if available.is_empty() {
            // EOF: a last line without a newline still counts.
            return Ok(match (skipped, line.is_empty()) {
                (0, true) => Frame::End,
                (0, false) => Frame::Line(std::mem::take(line)),
                (bytes, _) => Frame::TooLarge { bytes },
            });
        }
        let (chunk, found) = match available.iter().position(|&b| b == b'\n') {
            Some(i) => (&available[..i], true),
            None => (available, false),
        };
        let used = chunk.len() + usize::from(found);
        if skipped > 0 || line.len() + chunk.len() > limit {
            skipped += line.len() + chunk.len();
            line.clear();
        } else {
            line.extend_from_slice(chunk);
        }
        reader.consume(used);
        if found {
            return Ok(if skipped > 0 {
                Frame::TooLarge { bytes: skipped }
            } else {
                Frame::Line(std::mem::take(line))
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn splits_lines_and_skips_oversized_ones() {
        let input = b"{\"a\":1}\n0123456789abcdef\n{\"b\":2}\nlast";
        let mut reader = tokio::io::BufReader::with_capacity(4, &input[..]);
        let mut buf = Vec::new();
        assert_eq!(
            read_frame(&mut reader, 10, &mut buf).await.unwrap(),
            Frame::Line(b"{\"a\":1}".to_vec())
        );
        assert_eq!(
            read_frame(&mut reader, 10, &mut buf).await.unwrap(),
            Frame::TooLarge { bytes: 16 }
        );
        assert_eq!(
            read_frame(&mut reader, 10, &mut buf).await.unwrap(),
            Frame::Line(b"{\"b\":2}".to_vec())
        );
        assert_eq!(
            read_frame(&mut reader, 10, &mut buf).await.unwrap(),
            Frame::Line(b"last".to_vec())
        );
        assert_eq!(
            read_frame(&mut reader, 10, &mut buf).await.unwrap(),
            Frame::End
        );
    }
}
