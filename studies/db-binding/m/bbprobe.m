bbprobe ; the m-native mechanism: run OPERATION on N nodes ITERATIONS times, each timed with $ZUT (microseconds),
 ; and print the bridgebench/1 line. Command line: ITERATIONS OPERATION N, OPERATION one of
 ;   traverse  count the first N nodes of ^BCAT("lvd",*) with $ORDER and sum their subscripts
 ;   get       sum the values of ^BCAT("lvd",1..N)
 ;   set       kill ^BBSET, set ^BBSET("lvd",i)=i for i=1..N, then count and sum what it holds
 ; With BRIDGEBENCH_STEPPED=1 (lock-step blocks), it says it is ready, then runs each iteration when "g"
 ; comes on stdin and answers with the iteration's seconds on a line.
 new iters,op,limit,i,t0,t1,times,answer,got,stepped,go
 set iters=+$piece($zcmdline," ",1),op=$piece($zcmdline," ",2),limit=+$piece($zcmdline," ",3)
 if "traverse get set"'[op!(op="")!(limit<1)!(iters<1) write "usage: bbprobe ITERATIONS traverse|get|set N",! zhalt 2
 set times="",stepped=$ztrnlnm("BRIDGEBENCH_STEPPED")="1"
 if stepped write "bridgebench-stepped/1 ready",!
 for i=1:1:iters do
 . if stepped read go#1 if go'="g" zhalt 2
 . set t0=$zut
 . set got=$select(op="traverse":$$traverse(limit),op="get":$$get(limit),1:$$set(limit))
 . set t1=$zut
 . set times=times_$select(i>1:",",1:"")_$justify((t1-t0)/1000000,0,6)
 . if stepped write $justify((t1-t0)/1000000,0,6),!
 . if i=1 set answer=got
 . if answer'=got write "answers differ between iterations",! zhalt 1
 write "{""protocol"": ""bridgebench/1"", ""times"": ["_times_"], ""answer"": """_answer_""", ""vm"": """_$zversion_""", ""clock"": ""$ZUT""}",!
 quit
 ;
traverse(limit)
 new c,s,x
 set (c,s)=0,x=""
 for  set x=$order(^BCAT("lvd",x)) quit:x=""  set c=c+1,s=s+x quit:c=limit
 quit c_" "_s
get(limit)
 new i,s
 set s=0
 for i=1:1:limit set s=s+$get(^BCAT("lvd",i))
 quit limit_" "_s
set(limit)
 new i
 kill ^BBSET
 for i=1:1:limit set ^BBSET("lvd",i)=i
 quit $$tally^bbci()
