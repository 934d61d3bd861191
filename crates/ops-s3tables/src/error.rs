//! The crate's error: service errors by the model's exception names, and local failures.

/// Errors of the S3 Tables migration client and guard.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// 409 `ConflictException`: e.g. a table that exists, a sync while a migration is running,
    /// or a second complete.
    #[error("{operation}: conflict (409): {message}")]
    Conflict {
        /// The operation that was refused.
        operation: &'static str,
        /// The service's message.
        message: String,
    },
    /// 400 `BadRequestException`.
    #[error("{operation}: bad request (400): {message}")]
    BadRequest {
        /// The operation that was refused.
        operation: &'static str,
        /// The service's message.
        message: String,
    },
    /// 404 `NotFoundException`.
    #[error("{operation}: not found (404): {message}")]
    NotFound {
        /// The operation that was refused.
        operation: &'static str,
        /// The service's message.
        message: String,
    },
    /// 403 `AccessDeniedException`: the caller lacks a permission.
    #[error("{operation}: access denied (403): {message}; grant the caller s3tables:{operation}")]
    AccessDenied {
        /// The operation that was refused.
        operation: &'static str,
        /// The service's message.
        message: String,
    },
    /// 403 `ForbiddenException`: the caller is not authorized.
    #[error("{operation}: forbidden (403): {message}")]
    Forbidden {
        /// The operation that was refused.
        operation: &'static str,
        /// The service's message.
        message: String,
    },
    /// 403: the request's signature was refused (unknown access key, wrong secret, a clock
    /// too far off, or a request changed after signing).
    #[error(
        "{operation}: request signature refused (403 {error_type}): {message}; check the AWS \
         credentials, region and the machine's clock"
    )]
    Signature {
        /// The operation.
        operation: &'static str,
        /// `InvalidSignatureException`, `UnrecognizedClientException`, ...
        error_type: String,
        /// The service's message.
        message: String,
    },
    /// A value outside the model's enum (sent or received), or another validation failure.
    #[error("validation failed: {message}")]
    Validation {
        /// What is wrong and what to use instead.
        message: String,
    },
    /// 429 `TooManyRequestsException`, after every retry.
    #[error("{operation}: too many requests (429) after {attempts} attempts: {message}")]
    TooManyRequests {
        /// The operation.
        operation: &'static str,
        /// Attempts made.
        attempts: u32,
        /// The service's message.
        message: String,
    },
    /// 5xx `InternalServerErrorException`, after every retry.
    #[error("{operation}: server error ({status}) after {attempts} attempts: {message}")]
    Internal {
        /// The operation.
        operation: &'static str,
        /// HTTP status.
        status: u16,
        /// Attempts made.
        attempts: u32,
        /// The service's message.
        message: String,
    },
    /// A status the model does not list for the operation.
    #[error("{operation}: unexpected HTTP {status}: {body}")]
    Unexpected {
        /// The operation.
        operation: &'static str,
        /// HTTP status.
        status: u16,
        /// Response body.
        body: String,
    },
    /// The request could not be sent or the response not received.
    #[error("{operation}: request to {endpoint} failed: {source}")]
    Transport {
        /// The operation.
        operation: &'static str,
        /// Where it was sent.
        endpoint: String,
        /// The cause.
        #[source]
        source: reqwest::Error,
    },
    /// The response body is not the model's shape.
    #[error("{operation}: cannot decode response: {source}; body: {body}")]
    Decode {
        /// The operation.
        operation: &'static str,
        /// The body received.
        body: String,
        /// The cause.
        #[source]
        source: serde_json::Error,
    },
    /// No credentials or region from the AWS chain, or signing failed.
    #[error("AWS configuration: {0}")]
    Config(String),
    /// A report object could not be read.
    #[error("cannot read report s3://{bucket}/{key}: {message}")]
    Report {
        /// Report bucket.
        bucket: String,
        /// Report key.
        key: String,
        /// Why.
        message: String,
    },
}

impl Error {
    /// Whether the service refused because of a conflict or bad request (how a second complete
    /// answers).
    pub fn is_conflict_or_bad_request(&self) -> bool {
        matches!(self, Self::Conflict { .. } | Self::BadRequest { .. })
    }
}

/// Result with [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;
