"""Analysis for people who would rather look than read: charts drawn from the warehouse."""
