//! TLS to a PostgreSQL store (rustls: pure Rust, no OpenSSL to link or keep patched), by the
//! URL's `sslmode` as libpq means it: `disable` (never), `prefer` (TLS when the server offers
//! it, said on stderr when it does not), `require` (TLS; the certificate checked against
//! `sslrootcert` when one is given, as libpq does, else not checked), `verify-ca` (the chain
//! checked against `sslrootcert`), `verify-full` (the chain and the host name).

use rustls::client::WebPkiServerVerifier;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{CertificateError, DigitallySignedStruct, Error, RootCertStore, SignatureScheme};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

/// The `sslmode` values abperf supports (`allow` is refused by name).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Mode {
    Disable,
    Prefer,
    Require,
    VerifyCa,
    VerifyFull,
}

impl Mode {
    /// The mode an `sslmode` value names, or why it is not supported.
    pub(crate) fn parse(value: &str) -> Result<Mode, String> {
        Ok(match value {
            "disable" => Mode::Disable,
            "prefer" => Mode::Prefer,
            "require" => Mode::Require,
            "verify-ca" => Mode::VerifyCa,
            "verify-full" => Mode::VerifyFull,
            other => {
                return Err(format!(
                    "sslmode={other} is not supported by abperf (supported: disable, prefer, \
                     require, verify-ca, verify-full)"
                ));
            }
        })
    }

    /// What tokio-postgres negotiates for this mode.
    pub(crate) fn negotiated(self) -> postgres::config::SslMode {
        use postgres::config::SslMode;
        match self {
            Mode::Disable => SslMode::Disable,
            Mode::Prefer => SslMode::Prefer,
            _ => SslMode::Require,
        }
    }
}

/// A TLS connector for `mode` with the CA certificates of `root` (a PEM file), and a flag set
/// when TLS was used (a `prefer` connection that stayed plain is said so).
pub(crate) fn connector(
    mode: Mode,
    root: Option<&Path>,
) -> anyhow::Result<(Recorded, Arc<AtomicBool>)> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = rustls::ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()?;
    let root = match (mode, root) {
        (_, Some(r)) => Some(r.to_path_buf()),
        (Mode::VerifyCa | Mode::VerifyFull, None) => Some(default_root()?),
        _ => None,
    };
    let verifier: Arc<dyn ServerCertVerifier> = match root {
        Some(file) => {
            let mut roots = RootCertStore::empty();
            let certs = CertificateDer::pem_file_iter(&file)
                .and_then(|it| it.collect::<Result<Vec<_>, _>>())
                .map_err(|e| anyhow::anyhow!("sslrootcert {}: {e}", file.display()))?;
            anyhow::ensure!(
                !certs.is_empty(),
                "sslrootcert {}: no PEM certificate in it",
                file.display()
            );
            for cert in certs {
                roots
                    .add(cert)
                    .map_err(|e| anyhow::anyhow!("sslrootcert {}: {e}", file.display()))?;
            }
            let webpki =
                WebPkiServerVerifier::builder_with_provider(Arc::new(roots), provider.clone())
                    .build()?;
            Arc::new(Checked {
                webpki,
                names: mode != Mode::Require && mode != Mode::VerifyCa,
            })
        }
        None => Arc::new(Unchecked(provider)),
    };
    let config = builder
        .dangerous()
        .with_custom_certificate_verifier(verifier)
        .with_no_client_auth();
    let used = Arc::new(AtomicBool::new(false));
    let make = tokio_postgres_rustls::MakeRustlsConnect::new(config);
    Ok((
        Recorded {
            make,
            used: used.clone(),
        },
        used,
    ))
}

/// libpq's default CA file, `~/.postgresql/root.crt`, which verify-ca and verify-full need.
fn default_root() -> anyhow::Result<PathBuf> {
    let home = std::env::var_os("HOME").unwrap_or_default();
    let file = PathBuf::from(home).join(".postgresql/root.crt");
    anyhow::ensure!(
        file.is_file(),
        "sslmode=verify-ca and verify-full need the CA that signed the server's certificate: \
         give sslrootcert=FILE (or put it in {})",
        file.display()
    );
    Ok(file)
}

/// rustls's check of the chain, with the host name's check only when `names`.
#[derive(Debug)]
struct Checked {
    webpki: Arc<WebPkiServerVerifier>,
    names: bool,
}

impl ServerCertVerifier for Checked {
    fn verify_server_cert(
        &self,
        end: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        name: &ServerName<'_>,
        ocsp: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, Error> {
        match self
            .webpki
            .verify_server_cert(end, intermediates, name, ocsp, now)
        {
            Err(Error::InvalidCertificate(
                CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. },
            )) if !self.names => Ok(ServerCertVerified::assertion()),
            other => other,
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, Error> {
        self.webpki.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, Error> {
        self.webpki.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.webpki.supported_verify_schemes()
    }
}

/// `require` or `prefer` without a CA: encrypted, the certificate not checked (libpq's
/// behaviour; the docs say to use verify-full).
#[derive(Debug)]
struct Unchecked(Arc<rustls::crypto::CryptoProvider>);

impl ServerCertVerifier for Unchecked {
    fn verify_server_cert(
        &self,
        _: &CertificateDer<'_>,
        _: &[CertificateDer<'_>],
        _: &ServerName<'_>,
        _: &[u8],
        _: UnixTime,
    ) -> Result<ServerCertVerified, Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, Error> {
        let algs = &self.0.signature_verification_algorithms;
        rustls::crypto::verify_tls12_signature(message, cert, dss, algs)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, Error> {
        let algs = &self.0.signature_verification_algorithms;
        rustls::crypto::verify_tls13_signature(message, cert, dss, algs)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

/// rustls's connector, recording whether a connection used it.
pub(crate) struct Recorded {
    make: tokio_postgres_rustls::MakeRustlsConnect,
    used: Arc<AtomicBool>,
}

/// One connection's TLS handshake, recorded as used when it starts.
pub(crate) struct RecordedConnect {
    inner: <tokio_postgres_rustls::MakeRustlsConnect as postgres::tls::MakeTlsConnect<
        postgres::Socket,
    >>::TlsConnect,
    used: Arc<AtomicBool>,
}

impl postgres::tls::MakeTlsConnect<postgres::Socket> for Recorded {
    type Stream = <tokio_postgres_rustls::MakeRustlsConnect as postgres::tls::MakeTlsConnect<
        postgres::Socket,
    >>::Stream;
    type TlsConnect = RecordedConnect;
    type Error = std::convert::Infallible;

    fn make_tls_connect(&mut self, hostname: &str) -> Result<RecordedConnect, Self::Error> {
        let inner = postgres::tls::MakeTlsConnect::<postgres::Socket>::make_tls_connect(
            &mut self.make,
            hostname,
        )?;
        Ok(RecordedConnect {
            inner,
            used: self.used.clone(),
        })
    }
}

impl postgres::tls::TlsConnect<postgres::Socket> for RecordedConnect {
    type Stream = <tokio_postgres_rustls::MakeRustlsConnect as postgres::tls::MakeTlsConnect<
        postgres::Socket,
    >>::Stream;
    type Error = std::io::Error;
    type Future = <<tokio_postgres_rustls::MakeRustlsConnect as postgres::tls::MakeTlsConnect<
        postgres::Socket,
    >>::TlsConnect as postgres::tls::TlsConnect<postgres::Socket>>::Future;

    fn connect(self, stream: postgres::Socket) -> Self::Future {
        self.used.store(true, Ordering::SeqCst);
        self.inner.connect(stream)
    }
}
