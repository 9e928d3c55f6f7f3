"""The telehealth domain's fixed clock and the words its policy, predicates and mock backend share.

Why one module: the predicates judge a call by the same facts the mock backend acts on (how long a new
appointment lasts, which statuses can still change, what "today" is). Defining them once here, in the
domain layer the backend may import, keeps the gate and the tools from drifting apart.

The clock. tau-Trait's `cancel_appointment` stamps the wall-clock date, so the same trajectory gives a
different database every day. We fix "now" instead. The shared tau-Trait tasks call Tuesday 2025-05-20
"today" (a same-day sick visit at 08:30, a same-day slot at 06:00), so the domain's clock reads
2025-05-20 05:00, clinic time, before the earliest same-day slot. The data carries no time zones, so
neither does the clock.
"""

from __future__ import annotations

from datetime import date, datetime

REFERENCE_TIME = datetime(2025, 5, 20, 5, 0)
REFERENCE_DATE: date = REFERENCE_TIME.date()

# Appointment statuses in the data, and the two an agent may still act on.
STATUSES = ("scheduled", "pending_approval", "completed", "cancelled")
ACTIONABLE_STATUSES = frozenset({"scheduled", "pending_approval"})
# What cancel_appointment records (the one cancelled appointment in tau-Trait's data uses this reason).
CANCELLATION_REASON = "patient_cancelled"
# schedule_appointment books every new appointment for this long (tau-Trait's fixed default).
NEW_APPOINTMENT_MINUTES = 30

WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")

# Appointment types any provider can be booked for (the policy's list).
GENERAL_TYPES = ("routine_checkup", "follow_up", "consultation", "specialist_consultation", "sick_visit")
# Specialised visit types, each bookable only with providers of the listed specialties. Built from the
# visit types tau-Trait's own data and tasks book with each specialty; "surgery" is deliberately absent:
# the surgical team books operations, not the patient-support agent.
SPECIALISED_TYPES: dict[str, tuple[str, ...]] = {
    "therapy_session": ("Occupational Therapy", "Speech-Language Pathology", "Behavioral Analysis",
                        "Physical Therapy", "Clinical Psychology"),
    "device_coaching": ("Device Coaching",),
    "device_inspection": ("Device Coaching",),
    "compliance_coaching": ("Device Coaching",),
    "care_coordination": ("Care Coordination",),
    "team_conference": ("Developmental Pediatrics",),
    "medication_review": ("Primary Care", "Pharmacy"),
    "pre_op_consultation": ("Anesthesiology", "Cardiac Surgery", "Orthopedic Surgery"),
}

# Copay tier: Primary Care visits use the primary copay, every other specialty the specialist copay.
PRIMARY_CARE = "Primary Care"

# Interaction severities, mildest first; "severe" means any of SEVERE_SEVERITIES or an emergency flag.
SEVERITY_RANK = {"low": 1, "moderate": 2, "high": 3, "severe": 4, "critical": 5, "contraindicated": 6}
SEVERE_SEVERITIES = frozenset({"high", "severe", "critical", "contraindicated"})

# Who may act for whom: the emergency-contact relationship that makes the record's patient a dependant
# of the contact. A child under ADULT_AGE names a parent; an aged parent (AGED_PARENT_AGE or older) names
# a son or daughter.
PARENT_RELATIONSHIPS = frozenset({"parent", "mother", "father", "guardian", "legal guardian"})
CHILD_RELATIONSHIPS = frozenset({"son", "daughter", "child"})
ADULT_AGE = 18
AGED_PARENT_AGE = 65


def age_on(date_of_birth: str, on: date) -> int | None:
    """Whole years between a YYYY-MM-DD birth date and `on`; None when the birth date does not parse."""
    try:
        born = date.fromisoformat(date_of_birth)
    except (TypeError, ValueError):
        return None
    return on.year - born.year - ((on.month, on.day) < (born.month, born.day))


def copay_tier(specialty: str) -> str:
    """Which insurance copay a visit with this specialty uses: 'copay_primary' or 'copay_specialist'."""
    return "copay_primary" if specialty == PRIMARY_CARE else "copay_specialist"
