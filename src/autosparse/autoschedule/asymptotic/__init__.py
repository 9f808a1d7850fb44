"""The asymptotic autoscheduler of Ahrens, Kjolstad and Amarasinghe (PLDI 2022): task-set costs,
containment of conjunctive queries, a Pareto frontier of undominated schedules."""
