"""The parcel HDDL domain the HDDL tests share: deliver an item by packing and moving it, or
by nothing when it is there already (a method with an empty decomposition)."""

DOMAIN = """(define (domain parcel)
  (:requirements :typing :hierarchy :negative-preconditions)
  (:types item place)
  (:predicates (at ?i - item ?p - place) (packed ?i - item))
  (:task deliver :parameters (?i - item ?p - place))
  (:method m-pack-then-move :parameters (?i - item ?a - place ?p - place) :task (deliver ?i ?p)
    :precondition (and (at ?i ?a) (not (= ?a ?p)))
    :ordered-subtasks (and (t1 (pack ?i)) (t2 (move ?i ?a ?p))))
  (:method m-there :parameters (?i - item ?p - place) :task (deliver ?i ?p)
    :precondition (at ?i ?p) :ordered-subtasks (and))
  (:action pack :parameters (?i - item) :precondition (not (packed ?i)) :effect (packed ?i))
  (:action move :parameters (?i - item ?a - place ?p - place)
    :precondition (and (packed ?i) (at ?i ?a)) :effect (and (not (at ?i ?a)) (at ?i ?p))))
"""
PROBLEM_TEMPLATE = """(define (problem p1) (:domain parcel)
  (:objects box - item home shop - place)
  (:htn :ordered-subtasks (and (t0 (deliver box {to}))))
  (:init (at box {start})))
"""
#: the box from home to the shop
PROBLEM = PROBLEM_TEMPLATE.format(to="shop", start="home")
