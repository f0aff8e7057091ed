//! Test certificates, made with the `openssl` command, for the TLS tests of the cluster
//! locks (`pg.rs`, `redis.rs`).

use std::path::Path;
use std::process::{Command, Stdio};

/// Makes, in `r`: the CA (`ca.crt`, `ca.key`); the server's certificate for `localhost`
/// (not for `127.0.0.1`) signed by it (`server.crt`, `server.key`); another CA that signs
/// nothing (`other.crt`); the client CA (`client-ca.crt`) and, signed by it for the user
/// `postgres`, `client.crt` with its key in three forms (`client.key` PKCS#8,
/// `client-rsa.key` PKCS#1, `client-enc.key` encrypted with the password `secret`) and
/// `client-ec.crt` with a SEC1 key (`client-ec.key`).
///
/// # Panics
/// If the `openssl` command is missing or fails, with the reason.
pub(crate) fn make(r: &Path) {
    let openssl = |args: &[&str]| {
        let out = Command::new("openssl")
            .args(args)
            .current_dir(r)
            .stdin(Stdio::null())
            .output()
            .unwrap_or_else(|e| panic!("the TLS tests need the `openssl` command: {e}"));
        assert!(
            out.status.success(),
            "openssl {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    };
    for (name, cn) in [
        ("ca", "schedpool test CA"),
        ("other", "another CA"),
        ("client-ca", "schedpool client CA"),
    ] {
        openssl(&[
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-days",
            "2",
            "-subj",
            &format!("/CN={cn}"),
            "-keyout",
            &format!("{name}.key"),
            "-out",
            &format!("{name}.crt"),
            "-addext",
            "basicConstraints=critical,CA:TRUE",
            "-addext",
            "keyUsage=critical,keyCertSign,cRLSign",
        ]);
    }
    openssl(&[
        "req",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-subj",
        "/CN=localhost",
        "-keyout",
        "server.key",
        "-out",
        "server.csr",
    ]);
    std::fs::write(
        r.join("server.ext"),
        "subjectAltName=DNS:localhost\nextendedKeyUsage=serverAuth\n\
         keyUsage=critical,digitalSignature,keyEncipherment\nbasicConstraints=CA:FALSE\n",
    )
    .unwrap();
    openssl(&[
        "x509",
        "-req",
        "-in",
        "server.csr",
        "-CA",
        "ca.crt",
        "-CAkey",
        "ca.key",
        "-CAcreateserial",
        "-days",
        "2",
        "-extfile",
        "server.ext",
        "-out",
        "server.crt",
    ]);
    // The client certificates: an RSA key (PKCS#8, then PKCS#1 and encrypted copies)
    // and an EC key (SEC1), both for the user `postgres`, signed by the client CA.
    openssl(&[
        "ecparam",
        "-name",
        "prime256v1",
        "-genkey",
        "-noout",
        "-out",
        "client-ec.key",
    ]);
    for (csr, key_args) in [
        (
            "client",
            &["-newkey", "rsa:2048", "-nodes", "-keyout", "client.key"][..],
        ),
        ("client-ec", &["-key", "client-ec.key"][..]),
    ] {
        let mut args = vec!["req", "-new", "-subj", "/CN=postgres"];
        args.extend_from_slice(key_args);
        let out = format!("{csr}.csr");
        args.extend_from_slice(&["-out", &out]);
        openssl(&args);
    }
    std::fs::write(
        r.join("client.ext"),
        "extendedKeyUsage=clientAuth\nkeyUsage=critical,digitalSignature,keyEncipherment\n\
         basicConstraints=CA:FALSE\n",
    )
    .unwrap();
    for name in ["client", "client-ec"] {
        openssl(&[
            "x509",
            "-req",
            "-in",
            &format!("{name}.csr"),
            "-CA",
            "client-ca.crt",
            "-CAkey",
            "client-ca.key",
            "-CAcreateserial",
            "-days",
            "2",
            "-extfile",
            "client.ext",
            "-out",
            &format!("{name}.crt"),
        ]);
    }
    openssl(&[
        "rsa",
        "-in",
        "client.key",
        "-traditional",
        "-out",
        "client-rsa.key",
    ]);
    openssl(&[
        "pkcs8",
        "-topk8",
        "-in",
        "client.key",
        "-passout",
        "pass:secret",
        "-out",
        "client-enc.key",
    ]);
}
