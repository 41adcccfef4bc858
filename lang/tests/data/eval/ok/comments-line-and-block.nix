# leading
/* block */ 1 /* inner */ + # trailing
 2 /* multi
line */
