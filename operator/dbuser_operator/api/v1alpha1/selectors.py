"""Label selectors (metav1.LabelSelector): how a server's policy picks namespaces by their labels."""

from __future__ import annotations

from typing import Final, Literal

from pydantic import ConfigDict, Field, model_validator

from dbuser_operator.api.v1alpha1.meta import Model

LABEL_SELECTOR_OPERATORS = Literal["In", "NotIn", "Exists", "DoesNotExist"]
VALUES_REQUIRED_MESSAGE: Final = "values must be non-empty when operator is In or NotIn"
VALUES_FORBIDDEN_MESSAGE: Final = "values must be empty when operator is Exists or DoesNotExist"


class LabelSelectorRequirement(Model):
    """A label selector requirement: a key, an operator and values (metav1.LabelSelectorRequirement)."""

    model_config = ConfigDict(
        json_schema_extra={
            "x-kubernetes-validations": [
                {
                    "rule": "!(self.operator in ['In', 'NotIn'])"
                    " || (has(self.values) && size(self.values) > 0)",
                    "message": VALUES_REQUIRED_MESSAGE,
                    "fieldPath": ".values",
                },
                {
                    "rule": "self.operator in ['In', 'NotIn'] || !has(self.values) || size(self.values) == 0",
                    "message": VALUES_FORBIDDEN_MESSAGE,
                    "fieldPath": ".values",
                },
            ]
        }
    )

    key: str = Field(min_length=1, max_length=316)
    """The label key."""

    operator: LABEL_SELECTOR_OPERATORS
    """In, NotIn, Exists or DoesNotExist."""

    values: list[str] | None = None
    """The values of In and NotIn (non-empty); none for Exists and DoesNotExist."""

    @model_validator(mode="after")
    def _values_match_the_operator(self) -> LabelSelectorRequirement:
        """The CEL rules on values, with their messages (Kubernetes refuses such selectors too)."""
        if self.operator in {"In", "NotIn"} and not self.values:
            raise ValueError(VALUES_REQUIRED_MESSAGE)
        if self.operator in {"Exists", "DoesNotExist"} and self.values:
            raise ValueError(VALUES_FORBIDDEN_MESSAGE)
        return self


class LabelSelector(Model):
    """Namespaces by their labels (metav1.LabelSelector): every requirement must hold; empty selects all."""

    match_labels: dict[str, str] | None = None
    """Labels the namespace must carry, with these values."""

    match_expressions: list[LabelSelectorRequirement] | None = None
    """Requirements on the namespace's labels."""
