//! Bearer tokens: a configured `token`, or OAuth2 client credentials (`credential`) exchanged at
//! the token endpoint, refreshed before they expire and once when the catalog answers 401.
//!
//! PyIceberg's legacy OAuth2 manager fetches a token up front and again on a 401 (or 419); its
//! newer manager also refreshes a margin before `expires_in` runs out. This does both. The
//! margin is PyIceberg's 60 s, shortened to a fifth of the lifetime for short-lived tokens so a
//! 30-second token is not refreshed on every request.

use std::time::{Duration, Instant};

use iceberg::ErrorKind;
use serde::Deserialize;
use tokio::sync::Mutex;

use super::RestOptions;
use super::client::{RestClient, server_message};

/// The token to send, and which fetch produced it (so a 401 invalidates only that one).
#[derive(Debug, Clone)]
pub(crate) struct Bearer {
    pub token: String,
    pub generation: u64,
}

#[derive(Debug)]
struct Credential {
    client_id: Option<String>,
    client_secret: String,
}

#[derive(Debug, Default)]
struct State {
    token: Option<String>,
    /// When to fetch a new one (lifetime minus the margin); `None`: no known expiry.
    refresh_at: Option<Instant>,
    /// When the current one stops working, as the token endpoint said.
    expires_at: Option<Instant>,
    generation: u64,
}

#[derive(Deserialize)]
struct TokenResponse {
    access_token: String,
    #[serde(default, deserialize_with = "seconds")]
    expires_in: Option<u64>,
}

/// `expires_in` as a number or a numeric string (`"3600"`), as PyIceberg's pydantic model
/// accepts it (some identity providers send it quoted); anything else is an error naming the
/// field. A whole-valued float (`3600.0`) is accepted as pydantic accepts it.
fn seconds<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<u64>, D::Error> {
    use serde::de::Error as _;
    let bad = |shown: String| {
        D::Error::custom(format!(
            "`expires_in` is {shown}, not a whole number of seconds"
        ))
    };
    let value = Option::<serde_json::Value>::deserialize(d)?;
    let number = match &value {
        None | Some(serde_json::Value::Null) => return Ok(None),
        Some(serde_json::Value::Number(n)) => n.clone(),
        Some(serde_json::Value::String(s)) => match s.trim().parse::<serde_json::Number>() {
            Ok(n) => n,
            Err(_) => return Err(bad(format!("{s:?}"))),
        },
        Some(other) => return Err(bad(other.to_string())),
    };
    if let Some(n) = number.as_u64() {
        return Ok(Some(n));
    }
    match number.as_f64() {
        Some(f) if f >= 0.0 && f.fract() == 0.0 && f <= u64::MAX as f64 => Ok(Some(f as u64)),
        _ => Err(bad(number.to_string())),
    }
}

#[derive(Deserialize)]
struct OAuthError {
    error: String,
    #[serde(default)]
    error_description: Option<String>,
}

pub(crate) struct Auth {
    credential: Option<Credential>,
    /// `oauth2-server-uri` as configured.
    configured_endpoint: Option<String>,
    /// Where tokens come from when nothing was configured.
    default_endpoint: String,
    params: Vec<(String, String)>,
    had_token: bool,
    /// The configured `token` (sent when there is no `credential`).
    configured_token: Option<String>,
    state: Mutex<State>,
}

impl std::fmt::Debug for Auth {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Auth")
            .field("credential", &self.credential.as_ref().map(|_| "***"))
            .field("endpoint", &self.endpoint())
            .finish_non_exhaustive()
    }
}

impl Auth {
    pub(crate) fn from_options(opts: &RestOptions) -> Self {
        let credential = opts.get("credential").map(|c| match c.split_once(':') {
            Some((id, secret)) => Credential {
                client_id: Some(id.to_string()),
                client_secret: secret.to_string(),
            },
            None => Credential {
                client_id: None,
                client_secret: c.to_string(),
            },
        });
        // PyIceberg 0.12 (LegacyOAuth2AuthManager.__init__ → _refresh_token) fetches a token
        // with `credential` at once, replacing a configured `token`: with both set, the
        // configured token is never sent.
        let token = opts
            .get("token")
            .filter(|_| credential.is_none())
            .map(str::to_string);
        let mut params = vec![(
            "scope".to_string(),
            opts.get("scope").unwrap_or("catalog").to_string(),
        )];
        for key in ["audience", "resource"] {
            if let Some(v) = opts.get(key) {
                params.push((key.to_string(), v.to_string()));
            }
        }
        Auth {
            credential,
            configured_endpoint: opts.get("oauth2-server-uri").map(str::to_string),
            default_endpoint: format!("{}/v1/oauth/tokens", opts.uri),
            params,
            had_token: opts.get("token").is_some(),
            configured_token: token.clone(),
            state: Mutex::new(State {
                token,
                ..State::default()
            }),
        }
    }

    /// True when `other` would fetch tokens the same way (same credential, parameters and
    /// endpoint) and starts from the same configured token, so its token state can be kept.
    pub(crate) fn same_source(&self, other: &Auth) -> bool {
        let cred = |a: &Auth| {
            a.credential
                .as_ref()
                .map(|c| (c.client_id.clone(), c.client_secret.clone()))
        };
        cred(self) == cred(other)
            && self.params == other.params
            && self.endpoint() == other.endpoint()
            && self.had_token == other.had_token
            && self.configured_token == other.configured_token
    }

    fn endpoint(&self) -> &str {
        self.configured_endpoint
            .as_deref()
            .unwrap_or(&self.default_endpoint)
    }

    /// True when a 401 can be answered by fetching a new token.
    pub(crate) fn can_refresh(&self) -> bool {
        self.credential.is_some()
    }

    /// The token to send now, fetching or refreshing it first when due.
    pub(crate) async fn bearer(&self, client: &RestClient) -> iceberg::Result<Option<Bearer>> {
        let mut state = self.state.lock().await;
        let due = match (&state.token, state.refresh_at) {
            (None, _) => self.credential.is_some(),
            (Some(_), Some(at)) => Instant::now() >= at && self.credential.is_some(),
            (Some(_), None) => false,
        };
        if due {
            match self.fetch(client).await {
                Ok((token, expires_in)) => {
                    let (expires_at, refresh_at) = deadlines(Instant::now(), expires_in);
                    state.token = Some(token);
                    state.generation += 1;
                    state.expires_at = expires_at;
                    state.refresh_at = refresh_at;
                }
                Err(e) => {
                    // A refresh ahead of expiry may fail while the old token still works.
                    let still_valid = state
                        .expires_at
                        .is_some_and(|at| Instant::now() + Duration::from_secs(1) < at);
                    if state.token.is_some() && still_valid {
                        tracing::warn!(
                            catalog = client.catalog(),
                            error = %e,
                            "refreshing the OAuth2 token failed; using the current one until it expires"
                        );
                    } else {
                        return Err(e);
                    }
                }
            }
        }
        Ok(state.token.clone().map(|token| Bearer {
            token,
            generation: state.generation,
        }))
    }

    /// Drops the token a request was refused with, so the next request fetches a new one.
    pub(crate) async fn invalidate(&self, generation: u64) {
        let mut state = self.state.lock().await;
        if state.generation == generation && self.credential.is_some() {
            state.token = None;
            state.refresh_at = None;
            state.expires_at = None;
        }
    }

    /// What to tell the user when the catalog answered 401.
    pub(crate) fn advice_on_401(&self, refreshed: bool) -> String {
        match (&self.credential, self.had_token) {
            (None, false) => "the catalog requires authentication and none is configured: set \
                              `credential` (client_id:client_secret, with `oauth2-server-uri` \
                              for an external identity provider) or `token`"
                .into(),
            (None, true) => "the configured `token` was refused (expired or revoked?): set a \
                             fresh `token`, or `credential` so iceberg-ops fetches and renews \
                             tokens itself"
                .into(),
            (Some(_), _) if refreshed => format!(
                "a token freshly issued by {} was refused too: check that `credential`, `scope`, \
                 `audience` and `resource` match what the catalog expects",
                self.endpoint()
            ),
            (Some(_), _) => format!(
                "the token from {} was refused: check `credential`, `scope`, `audience` and \
                 `resource`",
                self.endpoint()
            ),
        }
    }

    async fn fetch(&self, client: &RestClient) -> iceberg::Result<(String, Option<Duration>)> {
        let Some(credential) = &self.credential else {
            return Err(client.error(
                ErrorKind::DataInvalid,
                "no `credential` to fetch a token with".into(),
            ));
        };
        let endpoint = self.endpoint();
        let mut form: Vec<(&str, &str)> = vec![("grant_type", "client_credentials")];
        if let Some(id) = &credential.client_id {
            form.push(("client_id", id));
        }
        form.push(("client_secret", &credential.client_secret));
        for (k, v) in &self.params {
            form.push((k, v));
        }
        let fail = |message: String| {
            client.error(
                ErrorKind::Unexpected,
                format!("fetching an OAuth2 token from {endpoint} failed: {message}"),
            )
        };
        let reply = client.post_form(endpoint, &form).await.map_err(fail)?;
        if !reply.status.is_success() {
            // OAuth2 errors are `{"error", "error_description"}`; never echo the request.
            let detail = match serde_json::from_slice::<OAuthError>(&reply.body) {
                Ok(e) => match e.error_description {
                    Some(d) => format!("{}: {d}", e.error),
                    None => e.error,
                },
                Err(_) => server_message(&reply.body),
            };
            let hint = match reply.status.as_u16() {
                400 | 401 | 403 => {
                    "; check `credential` (client_id:client_secret), `scope`, `audience`, \
                     `resource` and `oauth2-server-uri`"
                }
                404 | 405 => {
                    "; the catalog serves no token endpoint there: set `oauth2-server-uri` to \
                     your identity provider's token URL"
                }
                _ => "",
            };
            return Err(fail(format!("answered {} ({detail}){hint}", reply.status)));
        }
        let token: TokenResponse = serde_json::from_slice(&reply.body).map_err(|e| {
            fail(format!(
                "the response is not an OAuth2 token response ({e})"
            ))
        })?;
        tracing::debug!(
            catalog = client.catalog(),
            expires_in = ?token.expires_in,
            "fetched an OAuth2 token"
        );
        Ok((
            token.access_token,
            token.expires_in.map(Duration::from_secs),
        ))
    }
}

/// When a token fetched at `now` expires and when to refresh it. An `expires_in` too far out
/// for the clock (a server answering u64::MAX) means no known expiry, as no `expires_in` does.
fn deadlines(now: Instant, expires_in: Option<Duration>) -> (Option<Instant>, Option<Instant>) {
    let Some(lifetime) = expires_in else {
        return (None, None);
    };
    let Some(expires_at) = now.checked_add(lifetime) else {
        return (None, None);
    };
    // The margin is at most the lifetime, so this is never before `now`.
    let refresh_at = expires_at.checked_sub(margin(lifetime)).unwrap_or(now);
    (Some(expires_at), Some(refresh_at))
}

/// How long before expiry a token is refreshed.
fn margin(lifetime: Duration) -> Duration {
    (lifetime / 5).min(Duration::from_secs(60))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// PyIceberg accepts `expires_in` as a number or a numeric string; anything else is an
    /// error naming the field.
    #[test]
    fn expires_in_may_be_a_numeric_string() {
        let parse = |json: &str| {
            serde_json::from_str::<TokenResponse>(json)
                .map(|t| t.expires_in)
                .map_err(|e| e.to_string())
        };
        assert_eq!(
            parse(r#"{"access_token":"t","expires_in":3600}"#),
            Ok(Some(3600))
        );
        assert_eq!(
            parse(r#"{"access_token":"t","expires_in":"3600"}"#),
            Ok(Some(3600))
        );
        assert_eq!(
            parse(r#"{"access_token":"t","expires_in":" 60 "}"#),
            Ok(Some(60))
        );
        assert_eq!(
            parse(r#"{"access_token":"t","expires_in":3600.0}"#),
            Ok(Some(3600))
        );
        assert_eq!(parse(r#"{"access_token":"t"}"#), Ok(None));
        assert_eq!(parse(r#"{"access_token":"t","expires_in":null}"#), Ok(None));
        for bad in [r#""soon""#, "-5", "1.5", "true"] {
            let err = parse(&format!(r#"{{"access_token":"t","expires_in":{bad}}}"#))
                .err()
                .unwrap_or_default();
            assert!(err.contains("`expires_in`"), "{bad}: {err}");
        }
    }

    #[test]
    fn refresh_margin_scales_with_short_tokens() {
        assert_eq!(margin(Duration::from_secs(3600)), Duration::from_secs(60));
        assert_eq!(margin(Duration::from_secs(10)), Duration::from_secs(2));
        assert_eq!(margin(Duration::ZERO), Duration::ZERO);
    }
}
