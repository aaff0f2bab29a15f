//! One SMTP attempt of one stored reply, with `lettre`'s connection: every command's answer
//! is read, so a refused recipient, a 4xx and a 5xx are told apart (§18).

use std::time::Duration;

use lettre::address::Address;
use lettre::transport::smtp::authentication::{Credentials, Mechanism};
use lettre::transport::smtp::client::{AsyncSmtpConnection, Certificate, TlsParameters};
use lettre::transport::smtp::commands::{Data, Mail, Rcpt};
use lettre::transport::smtp::extension::ClientId;
use lettre::transport::smtp::response::Response;

use protege_core::{SmtpServer, TlsMode};

/// What one attempt sends, and where.
#[derive(Debug, Clone, Copy)]
pub struct Attempt<'a> {
    /// The server.
    pub server: &'a SmtpServer,
    /// The login and password, if any.
    pub login: Option<(&'a str, &'a str)>,
    /// A PEM bundle of roots added to the system's.
    pub ca_pem: Option<&'a [u8]>,
    /// The name given in `EHLO`.
    pub hello: &'a str,
    /// The most the whole exchange may take.
    pub timeout: Duration,
    /// The envelope sender.
    pub from: &'a str,
    /// The envelope recipients.
    pub recipients: &'a [String],
    /// The bytes of the message.
    pub raw: &'a [u8],
}

/// How an attempt ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// The server accepted the message (its final reply) for every recipient but those
    /// refused for good (address, reply).
    Sent {
        /// The server's reply to the data.
        reply: String,
        /// Recipients refused with a 5xx.
        refused: Vec<(String, String)>,
    },
    /// A failure that is not about this message (connection, TLS, greeting, `AUTH`, any
    /// answer before `MAIL FROM`): retried without limit.
    Connection(String),
    /// A 4xx for this message, or a connection lost or timed out once the message was on
    /// its way (it may have arrived: at least once): retried until `give_up_after`.
    Transient(String),
    /// A 5xx to `MAIL FROM` or to the data, or every recipient refused.
    Permanent {
        /// The server's reply.
        reply: String,
        /// Recipients refused with a 5xx.
        refused: Vec<(String, String)>,
    },
}

/// Where an exchange stood when it stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Stage {
    Connect,
    Message,
}

/// Makes `attempt`, bounded by its timeout.
pub async fn send(attempt: &Attempt<'_>) -> Outcome {
    let mut stage = Stage::Connect;
    match tokio::time::timeout(attempt.timeout, exchange(attempt, &mut stage)).await {
        Ok(outcome) => outcome,
        Err(_) => {
            let what = format!(
                "no answer from {}:{} within {} s",
                attempt.server.host,
                attempt.server.port,
                attempt.timeout.as_secs()
            );
            match stage {
                Stage::Connect => Outcome::Connection(what),
                Stage::Message => Outcome::Transient(what),
            }
        }
    }
}

/// The text of a server's reply: its code and its lines joined.
fn reply_text(response: &Response) -> String {
    let lines: Vec<&str> = response.message().collect();
    format!("{} {}", response.code(), lines.join(" "))
}

/// The text of an error.
fn error_text(error: &lettre::transport::smtp::Error) -> String {
    protege_core::one_line(&error.to_string()).into_owned()
}

/// The TLS parameters for `host`, with the roots of `attempt`'s `ca_file` added to the
/// system's.
fn tls_parameters(attempt: &Attempt<'_>, host: &str) -> Result<TlsParameters, String> {
    let mut builder = TlsParameters::builder(host.to_owned());
    if let Some(pem) = attempt.ca_pem {
        let cert = Certificate::from_pem(pem)
            .map_err(|e| format!("`ca_file` is not a PEM certificate: {}", error_text(&e)))?;
        builder = builder.add_root_certificate(cert);
    }
    builder.build_rustls().map_err(|e| error_text(&e))
}

/// The connection to `attempt`'s server, greeted with `hello`: in TLS from the start for
/// implicit TLS, else over plain TCP.
async fn open(attempt: &Attempt<'_>, hello: &ClientId) -> Result<AsyncSmtpConnection, Outcome> {
    let server = attempt.server;
    let wrapper = match server.security {
        TlsMode::Implicit => {
            Some(tls_parameters(attempt, &server.host).map_err(Outcome::Connection)?)
        }
        _ => None,
    };
    let connected = match wrapper {
        Some(params) => {
            AsyncSmtpConnection::connect_tokio1(
                (server.host.as_str(), server.port),
                Some(attempt.timeout),
                hello,
                Some(params),
                None,
            )
            .await
        }
        None => {
            // Without Nagle's algorithm: the client writes the data and its final `.` in
            // two writes, and the second would otherwise wait for the server's delayed
            // acknowledgement of the first (40 ms on Linux) on every message.
            let tcp =
                match tokio::net::TcpStream::connect((server.host.as_str(), server.port)).await {
                    Ok(tcp) => tcp,
                    Err(e) => {
                        return Err(Outcome::Connection(format!(
                            "cannot connect to {}:{}: {e}",
                            server.host, server.port
                        )));
                    }
                };
            let _ = tcp.set_nodelay(true);
            AsyncSmtpConnection::connect_with_transport(Box::new(tcp), hello).await
        }
    };
    connected.map_err(|e| Outcome::Connection(error_text(&e)))
}

/// Turns `conn` to TLS with `STARTTLS` when the server's security asks for it, then logs
/// in when `attempt` has a login; the connection is aborted on failure.
async fn secure_and_log_in(
    conn: &mut AsyncSmtpConnection,
    attempt: &Attempt<'_>,
    hello: &ClientId,
) -> Result<(), Outcome> {
    let server = attempt.server;
    if server.security == TlsMode::StartTls {
        if !conn.can_starttls() {
            conn.abort().await;
            return Err(Outcome::Connection(format!(
                "{}:{} offers no STARTTLS, which `smtp://` requires",
                server.host, server.port
            )));
        }
        let params = tls_parameters(attempt, &server.host).map_err(Outcome::Connection)?;
        if let Err(e) = conn.starttls(params, hello).await {
            conn.abort().await;
            return Err(Outcome::Connection(error_text(&e)));
        }
    }
    if let Some((user, password)) = attempt.login {
        let credentials = Credentials::new(user.to_owned(), password.to_owned());
        if let Err(e) = conn
            .auth(&[Mechanism::Plain, Mechanism::Login], &credentials)
            .await
        {
            conn.abort().await;
            return Err(Outcome::Connection(format!("AUTH: {}", error_text(&e))));
        }
    }
    Ok(())
}

/// Gives `conn` every recipient of `attempt` with `RCPT TO`: the recipients refused for
/// good (address, reply), or how the attempt ends when a recipient must wait or none is
/// accepted; the connection is aborted then.
async fn give_recipients(
    conn: &mut AsyncSmtpConnection,
    attempt: &Attempt<'_>,
) -> Result<Vec<(String, String)>, Outcome> {
    let mut refused = Vec::new();
    let mut accepted = 0usize;
    for recipient in attempt.recipients {
        let Ok(address) = recipient.parse::<Address>() else {
            refused.push((recipient.clone(), "not an address".to_owned()));
            continue;
        };
        match conn.command(Rcpt::new(address, Vec::new())).await {
            Ok(_) => accepted += 1,
            Err(e) if e.is_permanent() => refused.push((recipient.clone(), error_text(&e))),
            Err(e) => {
                // A recipient the server cannot take now: the whole message waits, so no
                // one receives it twice.
                conn.abort().await;
                return Err(Outcome::Transient(error_text(&e)));
            }
        }
    }
    if accepted == 0 {
        conn.abort().await;
        let reply = refused
            .last()
            .map_or_else(|| "no recipient".to_owned(), |(_, r)| r.clone());
        return Err(Outcome::Permanent { reply, refused });
    }
    Ok(refused)
}

/// The whole exchange of `attempt`: connection, TLS, login, envelope and data; `stage`
/// records whether the message was on its way when the exchange stopped.
async fn exchange(attempt: &Attempt<'_>, stage: &mut Stage) -> Outcome {
    let hello = ClientId::Domain(attempt.hello.to_owned());
    let mut conn = match open(attempt, &hello).await {
        Ok(conn) => conn,
        Err(outcome) => return outcome,
    };
    if let Err(outcome) = secure_and_log_in(&mut conn, attempt, &hello).await {
        return outcome;
    }
    let from: Address = match attempt.from.parse() {
        Ok(a) => a,
        Err(_) => {
            conn.abort().await;
            return Outcome::Permanent {
                reply: format!("`{}` is not an envelope address", attempt.from),
                refused: Vec::new(),
            };
        }
    };
    if let Err(e) = conn.command(Mail::new(Some(from), Vec::new())).await {
        conn.abort().await;
        return classify(&e, Vec::new(), Stage::Connect);
    }
    *stage = Stage::Message;
    let refused = match give_recipients(&mut conn, attempt).await {
        Ok(refused) => refused,
        Err(outcome) => return outcome,
    };
    if let Err(e) = conn.command(Data).await {
        conn.abort().await;
        return classify(&e, refused, Stage::Message);
    }
    // The client ends the data with CRLF `.` CRLF: the message's own last line end is
    // that CRLF, so the server stores exactly the bytes given.
    let data = attempt.raw.strip_suffix(b"\r\n").unwrap_or(attempt.raw);
    match conn.message(data).await {
        Ok(response) => {
            let _ = conn.quit().await;
            Outcome::Sent {
                reply: reply_text(&response),
                refused,
            }
        }
        Err(e) => {
            conn.abort().await;
            classify(&e, refused, Stage::Message)
        }
    }
}

/// The outcome of `error` at `stage`.
fn classify(
    error: &lettre::transport::smtp::Error,
    refused: Vec<(String, String)>,
    stage: Stage,
) -> Outcome {
    let text = error_text(error);
    if error.is_permanent() {
        Outcome::Permanent {
            reply: text,
            refused,
        }
    } else if error.is_transient() || stage == Stage::Message {
        Outcome::Transient(text)
    } else {
        Outcome::Connection(text)
    }
}
