// Licensed to the Apache Software Foundation (ASF) under one
// or more contributor license agreements.  See the NOTICE file
// distributed with this work for additional information
// regarding copyright ownership.  The ASF licenses this file
// to you under the Apache License, Version 2.0 (the
// "License"); you may not use this file except in compliance
// with the License.  You may obtain a copy of the License at
//
//   http://www.apache.org/licenses/LICENSE-2.0
//
// Unless required by applicable law or agreed to in writing,
// software distributed under the License is distributed on an
// "AS IS" BASIS, WITHOUT WARRANTIES OR CONDITIONS OF ANY
// KIND, either express or implied.  See the License for the
// specific language governing permissions and limitations
// under the License.

use std::fmt::Debug;

use anyhow::anyhow;
use aws_sdk_glue::error::{ProvideErrorMetadata, SdkError};
use iceberg::{Error, ErrorKind};

/// Format AWS SDK error into iceberg error
pub(crate) fn from_aws_sdk_error<T>(error: aws_sdk_glue::error::SdkError<T>) -> Error
where T: Debug + ProvideErrorMetadata {
    // iceberg-ops patch: the error becomes text below, so whether a later attempt may succeed
    // (a timeout, a dropped connection, throttling, a 5xx) is kept as `retryable`, for callers
    // that retry (a cluster task, a read).
    let retryable = transient(&error);
    Error::new(
        ErrorKind::Unexpected,
        "Operation failed for hitting aws sdk error".to_string(),
    )
    .with_retryable(retryable)
    .with_source(anyhow!("aws sdk error: {error:?}"))
}

/// iceberg-ops patch: whether `error` is one the AWS SDKs' standard retry mode retries.
fn transient<T: ProvideErrorMetadata>(error: &SdkError<T>) -> bool {
    match error {
        SdkError::TimeoutError(_) | SdkError::DispatchFailure(_) | SdkError::ResponseError(_) => {
            true
        }
        SdkError::ServiceError(e) => {
            let status = e.raw().status().as_u16();
            status >= 500
                || status == 429
                || matches!(
                    e.err().code(),
                    Some(
                        "Throttling"
                            | "ThrottlingException"
                            | "ThrottledException"
                            | "RequestThrottledException"
                            | "TooManyRequestsException"
                            | "ProvisionedThroughputExceededException"
                            | "TransactionInProgressException"
                            | "RequestLimitExceeded"
                            | "BandwidthLimitExceeded"
                            | "LimitExceededException"
                            | "RequestThrottled"
                            | "SlowDown"
                            | "PriorRequestNotComplete"
                            | "EC2ThrottledException"
                    )
                )
        }
        _ => false,
    }
}

/// Format AWS Build error into iceberg error
pub(crate) fn from_aws_build_error(error: aws_sdk_glue::error::BuildError) -> Error {
    Error::new(
        ErrorKind::Unexpected,
        "Operation failed for hitting aws build error".to_string(),
    )
    .with_source(anyhow!("aws build error: {error:?}"))
}
