use iceberg::spec::{PrimitiveType, Type};

/// True when Iceberg allows a column of type `from` to be changed to `to` (identity included):
/// int → long, float → double, decimal(P, S) → decimal(P', S) with P' ≥ P.
pub fn is_legal_promotion(from: &Type, to: &Type) -> bool {
    if from == to {
        return true;
    }
    match (from, to) {
        (Type::Primitive(f), Type::Primitive(t)) => {
            matches!(
                (f, t),
                (PrimitiveType::Int, PrimitiveType::Long)
                    | (PrimitiveType::Float, PrimitiveType::Double)
            ) || matches!(
                (f, t),
                (
                    PrimitiveType::Decimal { precision: p1, scale: s1 },
                    PrimitiveType::Decimal { precision: p2, scale: s2 },
                ) if s1 == s2 && p2 >= p1
            )
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(t: PrimitiveType) -> Type {
        Type::Primitive(t)
    }

    #[test]
    fn promotions() {
        use PrimitiveType::*;
        assert!(is_legal_promotion(&p(Int), &p(Long)));
        assert!(is_legal_promotion(&p(Float), &p(Double)));
        assert!(is_legal_promotion(&p(String), &p(String)));
        assert!(is_legal_promotion(
            &p(Decimal {
                precision: 9,
                scale: 2
            }),
            &p(Decimal {
                precision: 18,
                scale: 2
            })
        ));
        assert!(!is_legal_promotion(&p(Long), &p(Int)));
        assert!(!is_legal_promotion(&p(Int), &p(String)));
        assert!(!is_legal_promotion(
            &p(Decimal {
                precision: 9,
                scale: 2
            }),
            &p(Decimal {
                precision: 18,
                scale: 3
            })
        ));
        assert!(!is_legal_promotion(
            &p(Decimal {
                precision: 18,
                scale: 2
            }),
            &p(Decimal {
                precision: 9,
                scale: 2
            })
        ));
    }
}
