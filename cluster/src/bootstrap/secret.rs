//! The job's secret: what proves, at the rendezvous and on every bootstrap connection between
//! ranks, that a peer belongs to this job.
//!
//! The scenario's name and hash are no secret, so a hello alone proves nothing. The launcher
//! makes one random secret per job ([`JobSecret::generate`], `xrdma job-secret`) and hands it
//! to every rank, either in [`SECRET_VAR`] (hex) or in a file on the job's shared filesystem
//! named by [`SECRET_FILE_VAR`] (hex, readable by its owner only). Both sides of a rendezvous
//! or bootstrap connection then prove they hold it with an HMAC-SHA256 over the handshake
//! ([`JobSecret::mac`], [`super::Auth`]); the secret itself never goes on the wire, and
//! nothing here prints it.

use hmac::{Hmac, Mac};
use sha2::Sha256;
use std::path::{Path, PathBuf};

/// The variable holding the job's secret, as hex digits.
pub const SECRET_VAR: &str = "XRDMA_JOB_SECRET";

/// The variable naming a file that holds the job's secret, as hex digits (owner-only mode).
pub const SECRET_FILE_VAR: &str = "XRDMA_JOB_SECRET_FILE";

/// Bytes of a generated secret: 32, the output size of SHA-256 (RFC 2104, section 3,
/// recommends a key no shorter than the hash's output).
pub const SECRET_BYTES: usize = 32;

/// Fewest bytes a given secret may have: 16 (128 bits), RFC 2104's floor of the hash output
/// length halved; anything shorter is refused as guessable.
pub const MIN_SECRET_BYTES: usize = 16;

/// Bytes of a handshake nonce: 32, fresh from the OS's random source for every connection.
pub const NONCE_BYTES: usize = 32;

/// HMAC-SHA256 (RFC 2104 with SHA-256 of FIPS 180-4).
type HmacSha256 = Hmac<Sha256>;

/// A job's secret. Its `Debug` shows no byte of it.
#[derive(Clone)]
pub struct JobSecret(Vec<u8>);

impl std::fmt::Debug for JobSecret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "JobSecret({} bytes, not shown)", self.0.len())
    }
}

/// Why there is no usable job secret. No message holds the secret's value.
#[derive(Debug, thiserror::Error)]
pub enum SecretError {
    /// Neither variable is set.
    #[error(
        "no job secret: the ranks admit only processes that prove they hold the job's \
         secret. Make one per job with `xrdma job-secret` and give it to every rank, either as \
         {SECRET_VAR} (e.g. `export {SECRET_VAR}=$(xrdma job-secret)` before srun, which passes \
         the environment on; with mpirun add `-x {SECRET_VAR}`) or in a file on the job's \
         shared filesystem (`xrdma job-secret --file PATH`, owner-only) named by \
         {SECRET_FILE_VAR}=PATH"
    )]
    Missing,
    /// Both variables are set.
    #[error("{SECRET_VAR} and {SECRET_FILE_VAR} are both set: give the job secret one way")]
    Ambiguous,
    /// The value is not a secret: not hex, or too short.
    #[error("the job secret in {from} {reason}")]
    Malformed {
        /// Where it came from (the variable, or the file's path).
        from: String,
        /// What is wrong with it (never its value).
        reason: String,
    },
    /// The file cannot be read or written.
    #[error("job secret file {path}")]
    File {
        /// The file.
        path: PathBuf,
        /// The OS error.
        source: std::io::Error,
    },
    /// The file may be read by others than its owner.
    #[error(
        "job secret file {path} is readable by its group or others (mode {mode:03o}): \
         `chmod 600` it, a secret others can read admits them"
    )]
    Exposed {
        /// The file.
        path: PathBuf,
        /// Its permission bits.
        mode: u32,
    },
    /// The OS's random source failed.
    #[error("cannot draw random bytes from the OS: {reason}")]
    Random {
        /// getrandom's error.
        reason: String,
    },
}

/// `N` bytes from the OS's random source (`getrandom`): nonces and secrets.
///
/// # Errors
/// [`SecretError::Random`] when the source fails.
pub fn random_bytes<const N: usize>() -> Result<[u8; N], SecretError> {
    let mut b = [0u8; N];
    getrandom::fill(&mut b).map_err(|e| SecretError::Random {
        reason: e.to_string(),
    })?;
    Ok(b)
}

/// `bytes` as lowercase hex digits.
pub fn to_hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The bytes of the hex digits `text`, `None` when it is not an even count of hex digits.
pub fn from_hex(text: &str) -> Option<Vec<u8>> {
    if text.len() % 2 != 0 || !text.is_ascii() {
        return None;
    }
    (0..text.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(text.get(i..i + 2)?, 16).ok())
        .collect()
}

impl JobSecret {
    /// A fresh secret of [`SECRET_BYTES`] random bytes.
    ///
    /// # Errors
    /// [`SecretError::Random`].
    pub fn generate() -> Result<Self, SecretError> {
        Ok(JobSecret(random_bytes::<SECRET_BYTES>()?.to_vec()))
    }

    /// The secret as hex digits, what [`SECRET_VAR`] and the file hold. Only the launcher
    /// that hands the secret out calls it.
    pub fn to_hex(&self) -> String {
        to_hex(&self.0)
    }

    /// The secret in the hex digits `text` (surrounding whitespace ignored), `from` naming
    /// where it came from in errors.
    ///
    /// # Errors
    /// [`SecretError::Malformed`]: not hex, or fewer than [`MIN_SECRET_BYTES`] bytes.
    pub fn from_hex(text: &str, from: &str) -> Result<Self, SecretError> {
        let bad = |reason: String| SecretError::Malformed {
            from: from.to_string(),
            reason,
        };
        let bytes = from_hex(text.trim())
            .ok_or_else(|| bad("is not an even count of hex digits".into()))?;
        if bytes.len() < MIN_SECRET_BYTES {
            return Err(bad(format!(
                "has {} bytes, fewer than {MIN_SECRET_BYTES}: make one with `xrdma job-secret`",
                bytes.len()
            )));
        }
        Ok(JobSecret(bytes))
    }

    /// The secret in the file `path`: refused when its group or others may read it.
    ///
    /// # Errors
    /// [`SecretError::File`], [`SecretError::Exposed`], [`SecretError::Malformed`].
    pub fn from_file(path: &Path) -> Result<Self, SecretError> {
        let file = |source| SecretError::File {
            path: path.to_path_buf(),
            source,
        };
        let meta = std::fs::metadata(path).map_err(file)?;
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = meta.permissions().mode() & 0o777;
            if mode & 0o077 != 0 {
                return Err(SecretError::Exposed {
                    path: path.to_path_buf(),
                    mode,
                });
            }
        }
        #[cfg(not(unix))]
        let _ = meta;
        let text = std::fs::read_to_string(path).map_err(file)?;
        Self::from_hex(&text, &path.display().to_string())
    }

    /// The job's secret from the variables `var` looks up: [`SECRET_VAR`], else the file
    /// named by [`SECRET_FILE_VAR`].
    ///
    /// # Errors
    /// [`SecretError::Missing`] (its message says how to give one),
    /// [`SecretError::Ambiguous`], or the errors of [`JobSecret::from_hex`] and
    /// [`JobSecret::from_file`].
    pub fn from_lookup(var: impl Fn(&str) -> Option<String>) -> Result<Self, SecretError> {
        match (var(SECRET_VAR), var(SECRET_FILE_VAR)) {
            (Some(_), Some(_)) => Err(SecretError::Ambiguous),
            (Some(hex), None) => Self::from_hex(&hex, SECRET_VAR),
            (None, Some(path)) => Self::from_file(Path::new(&path)),
            (None, None) => Err(SecretError::Missing),
        }
    }

    /// The job's secret from this process's environment ([`JobSecret::from_lookup`]).
    ///
    /// # Errors
    /// As [`JobSecret::from_lookup`].
    pub fn from_env() -> Result<Self, SecretError> {
        Self::from_lookup(|k| std::env::var(k).ok())
    }

    /// Write the secret as hex to a new file `path`, readable and writable by its owner
    /// only (mode 0600 on Unix); an existing file is not overwritten.
    ///
    /// # Errors
    /// [`SecretError::File`], e.g. when `path` exists.
    pub fn write_file(&self, path: &Path) -> Result<(), SecretError> {
        use std::io::Write;
        let mut open = std::fs::OpenOptions::new();
        open.write(true).create_new(true);
        #[cfg(unix)]
        {
            use std::os::unix::fs::OpenOptionsExt;
            open.mode(0o600);
        }
        let file = |source| SecretError::File {
            path: path.to_path_buf(),
            source,
        };
        let mut f = open.open(path).map_err(file)?;
        writeln!(f, "{}", self.to_hex()).map_err(file)?;
        f.sync_all().map_err(file)
    }

    /// HMAC-SHA256 (RFC 2104) keyed with the secret over `label` and `fields`, each preceded
    /// by its length as a big-endian `u64`, so no two different transcripts read the same.
    pub fn mac(&self, label: &str, fields: &[&[u8]]) -> [u8; 32] {
        self.keyed(label, fields).finalize().into_bytes().into()
    }

    /// Whether `mac` is [`JobSecret::mac`] of `label` and `fields`, compared in constant
    /// time (`hmac`'s `verify_slice`), so the time taken tells nothing of the right value.
    pub fn verify(&self, label: &str, fields: &[&[u8]], mac: &[u8]) -> bool {
        self.keyed(label, fields).verify_slice(mac).is_ok()
    }

    fn keyed(&self, label: &str, fields: &[&[u8]]) -> HmacSha256 {
        // HMAC takes a key of any length (RFC 2104, section 2), so this cannot fail.
        let Ok(mut m) = HmacSha256::new_from_slice(&self.0) else {
            unreachable!("HMAC accepts keys of every length")
        };
        for part in std::iter::once(label.as_bytes()).chain(fields.iter().copied()) {
            m.update(&(part.len() as u64).to_be_bytes());
            m.update(part);
        }
        m
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    fn lookup(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let m: BTreeMap<String, String> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        move |k| m.get(k).cloned()
    }

    #[test]
    fn hmac_sha256_matches_rfc_4231_test_case_2() {
        // RFC 4231, 4.3: key "Jefe", data "what do ya want for nothing?". `mac` frames its
        // input, so check the primitive it keys.
        let mut m = HmacSha256::new_from_slice(b"Jefe").unwrap();
        m.update(b"what do ya want for nothing?");
        assert_eq!(
            to_hex(&m.finalize().into_bytes()),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
        );
    }

    #[test]
    fn a_mac_verifies_only_with_the_same_secret_label_and_fields() {
        let a = JobSecret::generate().unwrap();
        let b = JobSecret::generate().unwrap();
        let mac = a.mac("join", &[b"x", b"yz"]);
        assert!(a.verify("join", &[b"x", b"yz"], &mac));
        assert!(!b.verify("join", &[b"x", b"yz"], &mac));
        assert!(!a.verify("table", &[b"x", b"yz"], &mac));
        // Framed: moving a byte across fields changes the MAC.
        assert!(!a.verify("join", &[b"xy", b"z"], &mac));
        assert!(!a.verify("join", &[b"x", b"yz"], &mac[..31]));
    }

    #[test]
    fn the_secret_comes_from_the_variable_or_an_owner_only_file() {
        let s = JobSecret::generate().unwrap();
        let hex = s.to_hex();
        assert_eq!(hex.len(), 2 * SECRET_BYTES);
        let got = JobSecret::from_lookup(lookup(&[(SECRET_VAR, &hex)])).unwrap();
        assert_eq!(got.to_hex(), hex);
        assert!(!format!("{got:?}").contains(&hex[..8]));

        let e = JobSecret::from_lookup(lookup(&[])).unwrap_err().to_string();
        assert!(e.contains(SECRET_VAR) && e.contains(SECRET_FILE_VAR), "{e}");
        assert!(e.contains("xrdma job-secret"), "{e}");
        let e = JobSecret::from_lookup(lookup(&[(SECRET_VAR, "abcd")])).unwrap_err();
        assert!(e.to_string().contains("fewer than 16"), "{e}");
        let e = JobSecret::from_lookup(lookup(&[(SECRET_VAR, "not hex")])).unwrap_err();
        assert!(e.to_string().contains("hex digits"), "{e}");

        let dir = std::env::temp_dir().join(format!("xrdma-secret-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("job.secret");
        let _ = std::fs::remove_file(&path);
        s.write_file(&path).unwrap();
        assert!(s.write_file(&path).is_err(), "an existing file is kept");
        let p = path.to_str().unwrap();
        let got = JobSecret::from_lookup(lookup(&[(SECRET_FILE_VAR, p)])).unwrap();
        assert_eq!(got.to_hex(), hex);
        let both = JobSecret::from_lookup(lookup(&[(SECRET_VAR, &hex), (SECRET_FILE_VAR, p)]));
        assert!(matches!(both, Err(SecretError::Ambiguous)));
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o640)).unwrap();
            let e = JobSecret::from_lookup(lookup(&[(SECRET_FILE_VAR, p)])).unwrap_err();
            assert!(matches!(e, SecretError::Exposed { mode: 0o640, .. }), "{e}");
            assert!(!e.to_string().contains(&hex[..8]));
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
