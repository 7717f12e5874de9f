bbfill ; the study's data: ^BCAT("lvd",1..n), n from the command line
fill new i,n
 set n=+$zcmdline
 kill ^BCAT
 for i=1:1:n set ^BCAT("lvd",i)=""
 write "filled ^BCAT(""lvd"",1.."_n_")",!
 quit
