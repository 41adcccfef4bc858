//! A node's link turned into the arguments its modules' `shapes` receive: for each
//! module only what the link gave that module (secrets, credentials, logins, grants,
//! images, artifacts), as language values.

use std::rc::Rc;

use crate::link::{self, NodeLink};
use crate::shape;
use crate::shapes::ShapeArguments;

fn attr(name: &'static str, value: lang::Value) -> lang::value::Attr {
    lang::value::Attr {
        name: lang::Name::of(name),
        value,
        span: None,
    }
}

fn set(entries: Vec<lang::value::Attr>) -> lang::Value {
    lang::Value::Attrs(lang::value::Attrs::from_unsorted(entries))
}

/// The link-dependent arguments of one module's `shapes`.
pub(super) fn arguments(link: &NodeLink, module: &str) -> ShapeArguments {
    let named = |name: &str, value: lang::Value| lang::value::Attr {
        name: lang::Name::new(name.as_bytes()),
        value,
        span: None,
    };
    let secret = |sealed: &String| {
        lang::Value::Opaque(Rc::new(Box::new(link::SecretHandle {
            sealed: sealed.clone(),
        })))
    };
    let secrets = link
        .secrets
        .iter()
        .filter(|((owner, _), _)| owner == module)
        .map(|((_, name), sealed)| named(name, secret(sealed)))
        .collect();
    let credentials = link
        .credentials
        .iter()
        .filter(|((owner, _), _)| owner == module)
        .map(|((_, name), sealed)| named(name, secret(sealed)))
        .collect();
    let logins = link
        .logins
        .iter()
        .filter(|((owner, _), _)| owner == module)
        .map(|((_, name), login)| {
            let address = match &login.address {
                Some(address) => lang::Value::string_from(address),
                None => lang::Value::Null,
            };
            named(
                name,
                set(vec![
                    attr("address", address),
                    attr("facts", link::facts_value(&login.facts)),
                    attr("login", lang::Value::string_from(&login.login)),
                    attr(
                        "path",
                        login
                            .path
                            .as_deref()
                            .map_or(lang::Value::Null, lang::Value::string_from),
                    ),
                    attr("provider", lang::Value::string_from(&login.provider)),
                ]),
            )
        })
        .collect();
    let grants = link
        .grants
        .iter()
        .filter(|((owner, _), _)| owner == module)
        .map(|((_, service), grants)| {
            let list: Vec<lang::Value> = grants
                .iter()
                .map(|grant| {
                    set(vec![
                        attr("consumer", lang::Value::string_from(&grant.consumer)),
                        attr("credential", lang::Value::string_from(&grant.credential)),
                        attr("form", lang::Value::string_from(grant.form.name())),
                        attr("login", lang::Value::string_from(&grant.login)),
                    ])
                })
                .collect();
            named(service, lang::Value::List(lang::value::List::from(list)))
        })
        .collect();
    let images = link
        .images
        .iter()
        .filter(|((owner, _), _)| owner == module)
        .map(|((_, name), image)| named(name, lang::Value::string_from(image)))
        .collect();
    let artifacts = link
        .artifacts
        .iter()
        .filter(|((owner, _), _)| owner == module)
        .map(|((_, name), (file, digest))| {
            named(
                name,
                set(vec![
                    attr("_type", lang::Value::string_from(shape::ARTIFACT_MARKER)),
                    attr("artifact", lang::Value::string_from(file)),
                    attr("artifact_digest", lang::Value::string_from(digest)),
                ]),
            )
        })
        .collect();
    ShapeArguments {
        credentials: set(credentials),
        logins: set(logins),
        grants: set(grants),
        secrets: set(secrets),
        images: set(images),
        artifacts: set(artifacts),
    }
}
