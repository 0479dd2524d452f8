-- The capture worker analyzes each registered relation's projection as it
-- fills it (worker.ts, refreshStatistics), as it already analyzes the
-- synchro tables it fills (083). A membership function reads the projection
-- by key for every captured row; a projection never analyzed has no
-- statistics on its key, and the planner then reads the whole projection for
-- each transaction's keys. MAINTAIN is the right to analyze and nothing more.
GRANT MAINTAIN ON ALL TABLES IN SCHEMA synchro_projection TO synchro_worker;
ALTER DEFAULT PRIVILEGES FOR ROLE synchro_owner IN SCHEMA synchro_projection GRANT MAINTAIN ON TABLES TO synchro_worker;
