//! The rustls connector for a [`TlsSpec`] (feature `postgres-tls`): the verifier its mode
//! asks for, over the roots it names, and the client certificate it presents. Every file
//! is read here, when the lock is built.

use std::path::Path;
use std::sync::Arc;

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::client::WebPkiServerVerifier;
use rustls::crypto::{verify_tls12_signature, verify_tls13_signature, CryptoProvider};
use rustls::pki_types::pem::{self, PemObject};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};
use rustls::{
    CertificateError, ClientConfig, DigitallySignedStruct, InconsistentKeys, RootCertStore,
    SignatureScheme,
};
use tokio_postgres_rustls::MakeRustlsConnect;

use super::{Roots, TlsSpec, Verify};
use crate::cluster::LockError;

/// The connector for `spec` (the module notes of `tls/mod.rs`).
///
/// # Errors
/// [`LockError::Config`] for a file that cannot be read or holds no certificate (or no
/// key), a key that does not match its certificate, or an empty system store.
pub(in crate::cluster) fn connector(spec: &TlsSpec) -> Result<MakeRustlsConnect, LockError> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let verifier: Arc<dyn ServerCertVerifier> = match &spec.verify {
        Verify::Nothing => Arc::new(Unverified(provider.clone())),
        Verify::Chain(roots) => Arc::new(AnyName(webpki(roots, &provider)?)),
        Verify::Full(roots) => webpki(roots, &provider)?,
    };
    let builder = ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| LockError::Config(format!("TLS: {e}")))?
        .dangerous()
        .with_custom_certificate_verifier(verifier);
    let config = match &spec.client {
        None => builder.with_no_client_auth(),
        Some((cert, key)) => builder
            .with_client_auth_cert(certificates(cert, "sslcert")?, private_key(key)?)
            .map_err(|e| {
                let why = match e {
                    rustls::Error::InconsistentKeys(InconsistentKeys::KeyMismatch) => {
                        "the key does not match the certificate".to_owned()
                    }
                    other => other.to_string(),
                };
                LockError::Config(format!(
                    "client certificate {} with key {}: {why}",
                    cert.display(),
                    key.display()
                ))
            })?,
    };
    Ok(MakeRustlsConnect::new(config))
}

/// The standard verifier (chain and host name) over `roots`.
fn webpki(
    roots: &Roots,
    provider: &Arc<CryptoProvider>,
) -> Result<Arc<WebPkiServerVerifier>, LockError> {
    let mut store = RootCertStore::empty();
    match roots {
        Roots::File(path) => {
            for cert in certificates(path, "sslrootcert")? {
                store.add(cert).map_err(|e| {
                    LockError::Config(format!("sslrootcert {}: {e}", path.display()))
                })?;
            }
        }
        Roots::System => {
            let found = rustls_native_certs::load_native_certs();
            store.add_parsable_certificates(found.certs);
            if store.is_empty() {
                let why = found
                    .errors
                    .first()
                    .map_or_else(|| "it holds no certificate".to_owned(), |e| e.to_string());
                return Err(LockError::Config(format!(
                    "sslrootcert=system: the system's trust store: {why}"
                )));
            }
        }
    }
    WebPkiServerVerifier::builder_with_provider(Arc::new(store), provider.clone())
        .build()
        .map_err(|e| LockError::Config(format!("TLS: {e}")))
}

/// The certificates of a PEM file, at least one.
fn certificates(path: &Path, key: &str) -> Result<Vec<CertificateDer<'static>>, LockError> {
    let bad =
        |why: &dyn std::fmt::Display| LockError::Config(format!("{key} {}: {why}", path.display()));
    let certs = CertificateDer::pem_file_iter(path)
        .map_err(|e| bad(&e))?
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| bad(&e))?;
    if certs.is_empty() {
        return Err(bad(&"no PEM certificate in it"));
    }
    Ok(certs)
}

/// The first private key of a PEM file (PKCS#8, PKCS#1 or SEC1).
fn private_key(path: &Path) -> Result<PrivateKeyDer<'static>, LockError> {
    PrivateKeyDer::from_pem_file(path).map_err(|e| {
        let why = match e {
            pem::Error::NoItemsFound => {
                let text = std::fs::read_to_string(path).unwrap_or_default();
                if text.contains("ENCRYPTED") {
                    "the key is encrypted, which is not supported (sslpassword is not read): \
                     decrypt it, e.g. with `openssl pkey`"
                        .to_owned()
                } else {
                    "no PEM private key (PKCS#8, PKCS#1 or SEC1) in it".to_owned()
                }
            }
            other => other.to_string(),
        };
        LockError::Config(format!("sslkey {}: {why}", path.display()))
    })
}

/// `require` and `prefer`: encrypted, the certificate not checked (libpq's
/// semantics); the handshake's signatures still are.
#[derive(Debug)]
struct Unverified(Arc<CryptoProvider>);

impl ServerCertVerifier for Unverified {
    fn verify_server_cert(
        &self,
        _: &CertificateDer<'_>,
        _: &[CertificateDer<'_>],
        _: &ServerName<'_>,
        _: &[u8],
        _: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls12_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls13_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

/// `verify-ca`: the chain is checked against the roots, the host name is not.
#[derive(Debug)]
struct AnyName(Arc<WebPkiServerVerifier>);

impl ServerCertVerifier for AnyName {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        match self
            .0
            .verify_server_cert(end_entity, intermediates, server_name, ocsp, now)
        {
            Err(rustls::Error::InvalidCertificate(
                CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. },
            )) => Ok(ServerCertVerified::assertion()),
            other => other,
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.supported_verify_schemes()
    }
}
