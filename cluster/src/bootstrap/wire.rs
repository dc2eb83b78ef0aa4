//! The bootstrap's wire framing, apart from any socket so it can be fuzzed: each frame is a
//! 4-byte big-endian length followed by that many bytes of JSON (one [`Frame`]).

use super::Frame;

/// Largest frame accepted, bytes (64 MiB: the records of a 256-sender run are well below
/// 1 MiB; anything larger is a stray client, not a rank).
pub const MAX_FRAME_BYTES: u32 = 64 << 20;

/// `frame` on the wire: its length, then its JSON.
///
/// # Errors
/// The reason, when it cannot be encoded or is longer than [`MAX_FRAME_BYTES`].
pub fn encode_frame(frame: &Frame) -> Result<Vec<u8>, String> {
    let body = serde_json::to_vec(frame).map_err(|e| e.to_string())?;
    let len = u32::try_from(body.len())
        .ok()
        .filter(|&l| l <= MAX_FRAME_BYTES)
        .ok_or_else(|| {
            format!(
                "a `{}` frame of {} B exceeds the limit of {MAX_FRAME_BYTES} B",
                frame.kind(),
                body.len()
            )
        })?;
    let mut wire = Vec::with_capacity(body.len() + 4);
    wire.extend_from_slice(&len.to_be_bytes());
    wire.extend_from_slice(&body);
    Ok(wire)
}

/// The first whole frame at the start of `buf` and the bytes it took, `Ok(None)` while
/// `buf` holds only part of one. Reads nothing past the frame's length, allocates nothing
/// before the whole frame is there.
///
/// # Errors
/// Why the bytes are not a frame: a length above [`MAX_FRAME_BYTES`] (refused at once,
/// before its body arrives), or a body that is not a [`Frame`]'s JSON.
pub fn parse_frame(buf: &[u8]) -> Result<Option<(Frame, usize)>, String> {
    let Some(head) = buf.get(..4) else {
        return Ok(None);
    };
    let len = u32::from_be_bytes([head[0], head[1], head[2], head[3]]);
    if len > MAX_FRAME_BYTES {
        return Err(format!(
            "a frame of {len} B exceeds the limit of {MAX_FRAME_BYTES} B"
        ));
    }
    let end = 4 + len as usize;
    let Some(body) = buf.get(4..end) else {
        return Ok(None);
    };
    let frame = serde_json::from_slice(body).map_err(|e| e.to_string())?;
    Ok(Some((frame, end)))
}
