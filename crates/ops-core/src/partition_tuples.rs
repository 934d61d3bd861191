//! One copy of each partition tuple a plan's files hold: a table has far fewer partitions than
//! files, and a million planned files each with its own tuple held a million of them.
//!
//! Tuples are shared only when equal bit for bit. iceberg's `Struct` compares floats as
//! `OrderedFloat` does, where `-0.0 == 0.0`: Java keeps `d=-0.0` and `d=0.0` two partitions
//! (`Double.equals`), and an identity-partition value is read as a constant of each file, so a
//! file of one given the other's tuple would have its rows read with the other's value.

use std::collections::HashMap;
use std::sync::Arc;

use iceberg::spec::{Literal, PrimitiveLiteral, Struct};

/// Shared partition tuples (see the module docs).
#[derive(Default)]
pub struct PartitionTuples(HashMap<Struct, Arc<Struct>>);

impl PartitionTuples {
    /// No tuple yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// The shared copy of `tuple` (a copy of its own when it holds a float).
    pub fn shared(&mut self, tuple: &Struct) -> Arc<Struct> {
        match self.0.get(tuple).filter(|_| shareable(tuple)) {
            Some(shared) => shared.clone(),
            None => self.share(tuple.clone()),
        }
    }

    /// The shared copy of `tuple`, taken by value.
    pub fn share(&mut self, tuple: Struct) -> Arc<Struct> {
        if !shareable(&tuple) {
            return Arc::new(tuple);
        }
        if let Some(shared) = self.0.get(&tuple) {
            return shared.clone();
        }
        let shared = Arc::new(tuple.clone());
        self.0.insert(tuple, shared.clone());
        shared
    }
}

/// True when `Struct`'s equality is bit equality for `tuple`: no float or double in it (nor
/// a nested value, which a partition tuple never holds).
fn shareable(tuple: &Struct) -> bool {
    tuple.iter().all(|v| match v {
        None => true,
        Some(Literal::Primitive(p)) => {
            !matches!(p, PrimitiveLiteral::Float(_) | PrimitiveLiteral::Double(_))
        }
        Some(_) => false,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn equal_tuples_share_one_copy_but_signed_zeros_stay_apart() {
        let mut tuples = PartitionTuples::new();
        let eu = |s: &str| Struct::from_iter([Some(Literal::string(s)), None]);
        let a = tuples.shared(&eu("eu"));
        let b = tuples.share(eu("eu"));
        assert!(Arc::ptr_eq(&a, &b));
        assert!(!Arc::ptr_eq(&a, &tuples.shared(&eu("us"))));
        let zero = |z: f64| Struct::from_iter([Some(Literal::double(z))]);
        let pos = tuples.shared(&zero(0.0));
        let neg = tuples.shared(&zero(-0.0));
        // `Struct` calls them equal; the copies keep their own sign.
        assert_eq!(*pos, *neg);
        let sign = |s: &Struct| match s.fields()[0] {
            Some(Literal::Primitive(PrimitiveLiteral::Double(d))) => d.is_sign_negative(),
            _ => unreachable!(),
        };
        assert!(!sign(&pos) && sign(&neg));
        let f = tuples.share(Struct::from_iter([Some(Literal::float(-0.0))]));
        assert!(matches!(
            f.fields()[0],
            Some(Literal::Primitive(PrimitiveLiteral::Float(x))) if x.is_sign_negative()
        ));
    }
}
